import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runDriver } from './soak-run.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from './stores/services.js'

/*
 * The short sweep soak: the real driver (soak/sweep.ts), two receiver processes on one store, the emulator losing
 * results and approvals, the sweeper's process SIGKILLed once. The driver checks everything and exits non-zero on
 * any violation; its report is the failure message. `npm run soak:sweep` is the long version.
 */

const DRIVER = fileURLToPath(new URL('../soak/sweep.ts', import.meta.url))
// The logs of every run are PostgreSQL tables, whichever store it soaks.
const postgres = await serviceAvailable('PostgreSQL', DATABASE_URL)
const redis = postgres && (await serviceAvailable('Redis', REDIS_URL))

// Only stops a run that hangs: the driver bounds its own wait (the longest horizon plus the stated slack).
const TIMEOUT_MS = 300_000

function runSoak(store: 'redis' | 'postgres', signal: AbortSignal): Promise<{ code: number | null; output: string }> {
  return runDriver(DRIVER, { REDIS_URL, DATABASE_URL, SOAK_STORE: store, SOAK_PAYMENTS: '80', SOAK_WORKERS: '2', SOAK_KILLS: '1', SOAK_SLACK_MS: '8000' }, signal)
}

describe.concurrent('sweep soak: results lost, the sweeper finds them, across processes', () => {
  for (const [store, available] of [['redis', redis], ['postgres', postgres]] as const)
    it.skipIf(!available)(`${store}: every payment final once, no lookup of a final one, one sweeper at a time`, async ({ signal }) => {
      const { code, output } = await runSoak(store, signal)
      expect(output).toMatch(/^kills\s+1: the sweeper, pid \d+/m)
      expect(output).toMatch(/of payments already final 0;/)
      expect(output).toMatch(/overlaps 0$/m)
      expect(output).toMatch(/double runs 0/)
      expect(code, output).toBe(0)
    }, TIMEOUT_MS)
})
