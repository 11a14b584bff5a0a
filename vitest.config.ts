import { defineConfig } from 'vitest/config'

export default defineConfig({
  // Examples import the package by name ('fpx-collect/express'); resolve that to the sources as tsx does, so
  // tests that start the example shops never depend on a build in dist/.
  resolve: { tsconfigPaths: true },
  test: {
    include: ['test/**/*.test.ts'],
    // Validates FPX_SKIP and, when set, ends the run with a line saying what was skipped.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    // A hook that opens the first PGlite of a file compiles its WebAssembly: over 10 s on a loaded 2-CPU machine.
    hookTimeout: 30_000,
  },
})
