import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'
import { KNOWN_FAILURES } from './known-failures.js'
import { freePort, quoted, run, type Started, sleep, start, tail } from './processes.js'
import { CHECKS, type Check, type Outcome, readStatus, runRound, type Status } from './round.js'
import { type AppConfig, RUNTIMES, type Runtime } from './runtimes.js'

/**
 * Issue 35's "every runtime, tested for real": one small app per runtime (test/runtimes/apps/), each on the real
 * runtime installed from npm, importing the package as npm packs it, listening on 127.0.0.1; on each, the
 * receiver created at module scope, a genuine callback (200, handled once), the same again (200, not rerun),
 * forged ones (401) and the buyer's redirect (303). The emulator runs here, on Node, and each app is given its
 * {base_url}. `npm ci --prefix test/runtimes` installs the runtimes; `npm run test:runtimes` runs this file
 * (FPX_RUNTIMES=bun,deno for some of them); global-setup.ts builds and packs the package first. A runtime that fails says which and how, and nothing waits forever.
 */

const ignoreKnown = process.env.FPX_RUNTIMES_KNOWN_FAILURES === 'ignore'

function chosen(): Runtime[] {
  const asked = process.env.FPX_RUNTIMES?.split(',').map((id) => id.trim()).filter((id) => id !== '')
  if (asked === undefined || asked.length === 0) return RUNTIMES
  const unknown = asked.filter((id) => !RUNTIMES.some((runtime) => runtime.id === id))
  if (unknown.length > 0) throw new Error(`FPX_RUNTIMES names no runtime ${unknown.join(', ')}; known: ${RUNTIMES.map((runtime) => runtime.id).join(', ')}`)
  return RUNTIMES.filter((runtime) => asked.includes(runtime.id))
}

/** The test credentials never reach the output, even the emulator's demo ones. */
function redact(text: string): string {
  return text.split(DEMO.checksumToken).join('[checksum token]').split(DEMO.authToken).join('[auth token]')
}

async function answering(url: string, runtime: Runtime, app: Started): Promise<Status> {
  const deadline = Date.now() + runtime.startTimeoutMs
  for (;;) {
    const exit = app.exited()
    if (exit !== undefined) throw new Error(`the app stopped (${exit}) before answering GET /status`)
    if (runtime.fatal?.test(app.output()) === true) {
      // The rest of the runtime's report, for the message.
      await sleep(1000)
      const errors = [...new Set(app.output().split('\n').filter((line) => runtime.fatal?.test(line)).map((line) => line.trim()))]
      throw new Error(`the runtime reported an error before the app answered: ${errors.join(' ')}`)
    }
    try {
      return await readStatus(url)
    } catch (error) {
      if (Date.now() > deadline) {
        const cause = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error)
        throw new Error(`the app did not answer GET /status within ${runtime.startTimeoutMs / 1000} s (last: ${cause})`, { cause: error })
      }
    }
    await sleep(250)
  }
}

/** Starts the runtime's app, runs the round, stops the app; every check gets an outcome, whatever happens. */
async function exercise(runtime: Runtime, config: AppConfig, emulator: Emulator): Promise<Map<Check, Outcome>> {
  const outcomes = new Map<Check, Outcome>()
  const failAll = (detail: string) => {
    outcomes.set('starts', { ok: false, detail })
    for (const check of CHECKS) if (check !== 'starts') outcomes.set(check, { ok: false, detail: 'not run: the app did not start' })
  }
  const missing = runtime.needs.filter((path) => !existsSync(path))
  if (missing.length > 0) {
    failAll(`not installed (${missing.join(', ')} missing): run npm ci --prefix test/runtimes`)
    return outcomes
  }
  if (runtime.build !== undefined) {
    try {
      await run(runtime.build(config), runtime.startTimeoutMs)
    } catch (error) {
      failAll(`the build failed: ${error instanceof Error ? error.message : String(error)}`)
      return outcomes
    }
  }
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const app = start(runtime.start(port, config, await freePort()))
  try {
    let status: Status
    try {
      status = await answering(url, runtime, app)
    } catch (error) {
      failAll(`${error instanceof Error ? error.message : String(error)}; its output:\n${quoted(tail(app.output()))}`)
      return outcomes
    }
    outcomes.set('starts', { ok: runtime.runtime.test(status.runtime), detail: `answered on ${status.runtime}; expected ${runtime.runtime}` })
    for (const [check, outcome] of await runRound(url, emulator, runtime.runtime)) outcomes.set(check, outcome)
    // What the app printed explains most failures (a stack, a logged cause).
    for (const outcome of outcomes.values()) if (!outcome.ok) outcome.detail += `\n  the app's output, last lines:\n${quoted(tail(app.output(), 15))}`
    return outcomes
  } finally {
    await app.stop()
  }
}

interface Row {
  runtime: string
  check: Check
  result: 'passes' | 'known failure' | 'FAILS'
  detail: string
}

const rows: Row[] = []

function judge(runtime: Runtime, check: Check, outcome: Outcome | undefined): void {
  const seen = outcome ?? { ok: false, detail: 'no outcome: the harness did not reach this check' }
  const detail = redact(seen.detail)
  const known = ignoreKnown ? undefined : KNOWN_FAILURES[runtime.id]?.[check]
  const firstLine = detail.split('\n')[0] ?? ''
  if (known === undefined) {
    rows.push({ runtime: runtime.id, check, result: seen.ok ? 'passes' : 'FAILS', detail: firstLine })
    if (!seen.ok) throw new Error(`${runtime.title}: ${check}: ${detail}`)
    return
  }
  rows.push({ runtime: runtime.id, check, result: !seen.ok && detail.includes(known) ? 'known failure' : 'FAILS', detail: firstLine })
  if (seen.ok) throw new Error(`${runtime.title}: ${check} now passes: remove it from test/runtimes/known-failures.ts (${detail})`)
  if (!detail.includes(known)) throw new Error(`${runtime.title}: ${check} fails, but not as known ("${known}"): ${detail}`)
}

describe('the runtime apps', () => {
  const runtimes = chosen()
  let emulator: Emulator | undefined
  let config: AppConfig

  beforeAll(async () => {
    emulator = await launch({ log: () => {} })
    config = { baseUrl: emulator.baseUrl, uid: DEMO.uid, authToken: DEMO.authToken, checksumToken: DEMO.checksumToken }
  }, 300_000)

  afterAll(async () => {
    await emulator?.stop()
    const width = Math.max(...rows.map((row) => row.runtime.length))
    const lines = rows.map((row) => `${row.runtime.padEnd(width)}  ${row.check.padEnd(12)}  ${row.result.padEnd(13)}  ${row.detail.slice(0, 160)}`)
    console.log(`\nruntime checks:\n${lines.join('\n')}\n`)
  })

  for (const runtime of runtimes) {
    describe(runtime.title, () => {
      let outcomes = new Map<Check, Outcome>()
      beforeAll(async () => {
        if (emulator === undefined) throw new Error('the emulator did not start')
        outcomes = await exercise(runtime, config, emulator)
      }, runtime.startTimeoutMs * 2 + 240_000)
      for (const check of CHECKS) {
        const known = ignoreKnown ? undefined : KNOWN_FAILURES[runtime.id]?.[check]
        it(known === undefined ? check : `${check}: fails today, as known (${known})`, () => judge(runtime, check, outcomes.get(check)))
      }
    })
  }
})
