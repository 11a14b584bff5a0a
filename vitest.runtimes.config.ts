import { defineConfig } from 'vitest/config'

// The runtime apps alone (test/runtimes/): each runtime is a real process from its npm package, and Next's edge
// app a production build, so this is not in `npm test` but in `npm run test:runtimes`, which .ci/run calls after
// `npm ci --prefix test/runtimes` has installed the runtimes.
export default defineConfig({
  test: {
    include: ['test/runtimes/*.slow-test.ts'],
    // Builds and packs the package once; the files then share its work folder, one after the other.
    globalSetup: ['test/runtimes/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 900_000,
  },
})
