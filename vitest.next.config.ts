import { defineConfig } from 'vitest/config'

// The Next.js build test alone: a production build takes minutes, so it is not in `npm test` (whose every test
// runs or fails) but in `npm run test:next`, which .ci/run calls.
export default defineConfig({
  test: {
    include: ['test/adapters/nextjs.slow-test.ts'],
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
})
