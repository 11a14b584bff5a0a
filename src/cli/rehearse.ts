/**
 * `fpx-collect rehearse`: a sale day against the merchant's own app before it happens. The emulator (in this
 * process, or a running one) makes payments at a steady rate and delivers their results to the app's own routes:
 * callbacks with duplicates and the emulator's retries, the buyers' redirects, failures and B2B1 approvals.
 */
import { createClient } from '../client/index.js'
import { startEmulator } from '../emulator/server.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io } from './common.js'
import { poster } from './rehearse-http.js'
import { runPayments } from './rehearse-load.js'
import { startRecorder } from './rehearse-recorder.js'
import { callbackSummary, emulatorSetup, type RehearsalOptions, readOptions, reportText, settleCallbacks } from './rehearse-report.js'
import { HealthMeter, percentile, saturation, Tally } from './rehearse-stats.js'

export const REHEARSE_HELP = `Usage: fpx-collect rehearse --callback-url URL [--redirect-url URL] [--rate 10] [--duration 30] [options]

Rehearses a sale against your own app: payments at a steady rate through the emulator of the service, their
callbacks (with duplicates and the emulator's retries) posted to your callback route, the buyers' browsers posting
to your redirect route, a share of failed payments and of B2B1 payments approved after a pending result. Shows a
progress line every second, then deliveries per second, latency, answers by route and status, handler errors, and
what gave way first: your app, its store or the emulator.

Start your app against the emulator first: it confirms results through the emulator's API at the base URL printed
here (http://127.0.0.1:4010/api with the default --port), with the credentials given here.

  --callback-url URL     Your callback route (required).
  --redirect-url URL     Your redirect route; without it the payments have no redirect_url and no redirect is posted.
  --rate N               Payments started per second (default 10), whatever your app answers (open loop).
  --duration S           Seconds of payments (default 30).
  --duplicates N         Extra copies of every callback the emulator posts at once, 0 to 10 (default 1).
  --failures SHARE       Share of payments the bank rejects, 0 to 1 (default 0.1).
  --b2b1 SHARE           Share of B2B1 payments, pending approval (99) then approved (00) (default 0.1).
  --approval-delay S     Seconds from pending to approved (default 2).
  --settle S             Seconds to wait at the end for the emulator's callback retries (default 15).
  --port N               Port of the emulator started in this process (default 4010; 0 picks a free one).
  --emulator URL         Use a running emulator (fpx-collect emulator) instead; your credentials must be among its
                         merchants' (its --config). Its callbacks reach this process on 127.0.0.1.
  --uid UID              Your API UID; better: set FPX_UID.
  --auth-token T         Your Auth Token; better: set FPX_AUTH_TOKEN.
  --checksum-token T     Your Checksum Token; better: set FPX_CHECKSUM_TOKEN. None of the three is ever printed.
                         With none of them, the emulator's demo merchant (fpx-collect emulator prints its values).
  --json                 The report as JSON on standard output (progress lines go to standard error).

Exit codes: 0 no errors, 1 errors occurred (an answer 4xx or 5xx or none, a failure of the emulator's API, a
callback the emulator gave up on or still retried at the end), 2 usage error, 3 could not run (port in use, the
emulator unreachable or refusing the credentials).
`

/** The emulator's retries in this process: as the service's, but 1, 2 and 4 s apart so a run ends in seconds. */
const DELIVERY = { attempts: 4, initialDelayMs: 1000, maxDelayMs: 4000 }

/**
 * Why the run should stop now: the app refused every one of its first deliveries as not signed for it (401), so
 * its credentials are not the ones given here and the rest of the run would say the same.
 */
function refusedWholesale(tally: Tally): string | undefined {
  const answers = Object.entries({ ...tally.byRoute.callback, ...tally.byRoute.redirect })
  if (tally.answers < 20 || !answers.every(([key]) => key.startsWith('401'))) return undefined
  return (
    `the app refused all of the first ${tally.answers} deliveries (${answers.map(([key]) => key).join(', ')}): it verifies with another ` +
    'Checksum Token or API UID than the ones given here'
  )
}

export async function rehearse(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    'callback-url': { type: 'string' },
    'redirect-url': { type: 'string' },
    rate: { type: 'string' },
    duration: { type: 'string' },
    duplicates: { type: 'string' },
    failures: { type: 'string' },
    b2b1: { type: 'string' },
    'approval-delay': { type: 'string' },
    settle: { type: 'string' },
    port: { type: 'string' },
    emulator: { type: 'string' },
    uid: { type: 'string' },
    'auth-token': { type: 'string' },
    'checksum-token': { type: 'string' },
    json: { type: 'boolean' },
  })
  if (helpRequested(args, io, REHEARSE_HELP)) return EXIT.ok
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${args.positionals[0]}`)
  const options: RehearsalOptions = readOptions(args, env)
  const say = (text: string) => (options.json ? io.err(text) : io.out(text))

  const emulatorLog: string[] = []
  let emulator: { url: string; baseUrl: string; stop(): Promise<void> }
  try {
    emulator =
      options.emulatorUrl === undefined
        ? await startEmulator({ port: options.port, config: emulatorSetup(options.credentials), delivery: DELIVERY, log: (line) => void emulatorLog.push(line) })
        : { url: options.emulatorUrl, baseUrl: `${options.emulatorUrl}/api`, stop: async () => {} }
  } catch (error) {
    const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
    const hint = inUse ? `: port ${options.port} is taken; if an emulator runs there, pass --emulator http://127.0.0.1:${options.port}` : ''
    io.err(`fpx-collect rehearse: cannot start the emulator: ${(error as Error).message}${hint}\n`)
    return EXIT.failure
  }
  const http = poster()
  const tally = new Tally()
  const recorder = await startRecorder(options.callbackUrl, http, (answer) => tally.record(answer))
  let restoreFaults: string | undefined
  try {
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...options.credentials, logger: false, maxRetries: 0 })
    try {
      await client.validateCredentials()
      const faults = await fetch(`${emulator.url}/__emulator/faults`)
      if (!faults.ok) throw new Error(`its control API answered ${faults.status}`)
      restoreFaults = await faults.text()
      const set = await fetch(`${emulator.url}/__emulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...(JSON.parse(restoreFaults) as object), duplicate: options.duplicates }) })
      if (!set.ok) throw new Error(`setting its faults answered ${set.status}`)
    } catch (error) {
      io.err(`fpx-collect rehearse: the emulator at ${emulator.url} cannot be used: ${(error as Error).message}\n`)
      return EXIT.failure
    }
    say(
      `Emulator base URL for your app's confirmation: ${emulator.baseUrl} (credentials: ${options.demo ? "the emulator's demo merchant's" : 'those you gave, not shown'})\n` +
        `Rehearsing ${options.duration} s at ${options.rate} payments/s: callbacks to ${options.callbackUrl} (+${options.duplicates} duplicate each)` +
        `${options.redirectUrl === undefined ? ', no redirects' : `, redirects to ${options.redirectUrl}`}\n`,
    )

    const meter = new HealthMeter()
    const started = performance.now()
    const orderPrefix = `REH${Date.now().toString(36).toUpperCase()}`
    const load = runPayments({ ...options, seconds: options.duration, callbackUrl: recorder.url, emulatorUrl: emulator.url, client, orderPrefix }, http, (answer) => tally.record(answer))
    let [last, emulatorCalls, startedBefore] = [started, 0, 0]
    let stoppedEarly: string | undefined
    const ticker = setInterval(() => {
      const now = performance.now()
      const emulatorMs = load.progress.emulatorMs.slice(emulatorCalls)
      const second = tally.tick(Math.round((now - started) / 1000), meter.read(), emulatorMs)
      const offered = (load.progress.started - startedBefore) / ((now - last) / 1000)
      ;[last, emulatorCalls, startedBefore] = [now, load.progress.emulatorMs.length, load.progress.started]
      const all = [...tally.latencies]
      const shown = (p: number) => (all.length === 0 ? '-' : percentile(all, p).toFixed(0))
      io.err(
        `[${String(second.at).padStart(3)} s] offered ${offered.toFixed(0)} payments/s, answered ${second.answers} deliveries/s, ` +
          `in flight ${load.progress.inFlight + recorder.inFlight}, p50 ${shown(50)} ms p99 ${shown(99)} ms so far, errors ${tally.errors}\n`,
      )
      stoppedEarly ??= refusedWholesale(tally)
      if (stoppedEarly !== undefined) load.stop()
    }, 1000)
    // Ctrl+C (or SIGTERM): stop making payments and still report what ran, rather than dying without a word.
    const interrupt = () => {
      stoppedEarly ??= 'interrupted (SIGINT or SIGTERM); the report covers the payments made until then'
      load.stop()
    }
    process.on('SIGINT', interrupt)
    process.on('SIGTERM', interrupt)
    try {
      await load.finished
      // Stopped early, the retries would only repeat the same refusal: stopping the emulator cancels them.
      const settled = await settleCallbacks(emulator.url, load.progress.exchangeNumbers, stoppedEarly === undefined ? options.settle : 0)
      const summary = callbackSummary(settled)
      // A delivery caught mid-answer as the run ends is not a hang: give those a second before counting the rest.
      const waiting = () => load.progress.inFlight + recorder.inFlight
      for (let waited = 0; waiting() > 0 && waited < 1000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
      const report = {
        options,
        tally,
        progress: load.progress,
        callbacks: summary,
        saturation: saturation(tally.seconds, options.emulatorUrl === undefined, waiting()),
        emulatorLog,
        stoppedEarly,
      }
      const { text, json, errors } = reportText(report)
      io.out(options.json ? `${JSON.stringify(json, null, 2)}\n` : text)
      return errors > 0 ? EXIT.negative : EXIT.ok
    } finally {
      process.off('SIGINT', interrupt)
      process.off('SIGTERM', interrupt)
      clearInterval(ticker)
      meter.stop()
    }
  } finally {
    if (restoreFaults !== undefined)
      await fetch(`${emulator.url}/__emulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: restoreFaults }).then((r) => r.text(), () => undefined)
    await recorder.close()
    http.close()
    await emulator.stop()
  }
}
