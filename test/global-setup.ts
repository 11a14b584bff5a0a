import { skipSummary, skipsRequested } from './requirements.js'

/**
 * Once per run: an FPX_SKIP naming something the suite does not know fails the run before any test, and a run
 * with FPX_SKIP ends with a line saying what it did not test (test/requirements.ts).
 */
export default function setup(): () => void {
  skipsRequested()
  return () => {
    const summary = skipSummary()
    if (summary !== undefined) console.warn(`\n${summary}\n`)
  }
}
