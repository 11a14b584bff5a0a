import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    testing: 'src/testing.ts',
    express: 'adapters/express.ts',
    koa: 'adapters/koa.ts',
    fastify: 'adapters/fastify.ts',
    web: 'adapters/web.ts',
    redis: 'src/redis-store.ts',
    postgres: 'src/postgres-store.ts',
    emulator: 'src/emulator/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  splitting: true,
  // Framework packages are the app's own (optional peer dependencies); never bundle them.
  external: ['express', 'koa', 'fastify', 'fastify-plugin', 'raw-body', 'zod'],
})
