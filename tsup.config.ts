import { defineConfig } from 'tsup'

// Framework packages are the app's own (optional peer dependencies), and so are pdfkit (only the emulator's
// receipts import it, lazily) and @opentelemetry/api (imported when a receiver is created, if installed);
// pg and ioredis are the app's too: `fpx-collect inbox` loads them only when given such a URL. Never bundle them.
const external = ['express', 'koa', 'fastify', 'fastify-plugin', 'raw-body', 'zod', 'pdfkit', 'pg', 'ioredis', 'redis', '@opentelemetry/api']

export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      testing: 'src/testing.ts',
      express: 'adapters/express.ts',
      koa: 'adapters/koa.ts',
      fastify: 'adapters/fastify.ts',
      web: 'adapters/web.ts',
      redis: 'src/stores/redis/store.ts',
      postgres: 'src/stores/postgres/store.ts',
      emulator: 'src/emulator/index.ts',
      client: 'src/client/index.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    splitting: true,
    external,
  },
  {
    // The command-line tool: one executable ES module, built after the library (so no clean).
    entry: { cli: 'src/cli/index.ts' },
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    dts: false,
    clean: false,
    sourcemap: true,
    external,
  },
])
