/**
 * `fpx-collect rehearse`: its options (flags and environment, the credentials never echoed), the emulator's side
 * of the end of a run (callbacks settled or given up), and the report, as text or JSON.
 */
import { DEMO_MERCHANT, type EmulatorConfig } from '../emulator/config.js'
import { AUTH_TOKEN_PATTERN, CHECKSUM_TOKEN_PATTERN, UUID_PATTERN } from '../emulator/ids.js'
import { type ParsedArgs, UsageError } from './args.js'
import type { LoadProgress } from './rehearse-load.js'
import { percentile, type Saturation, type Tally } from './rehearse-stats.js'

export interface RehearsalOptions {
  callbackUrl: string
  redirectUrl: string | undefined
  rate: number
  duration: number
  duplicates: number
  failures: number
  b2b1: number
  approvalDelayMs: number
  settle: number
  port: number
  /** A running emulator's root; undefined: start one in this process. */
  emulatorUrl: string | undefined
  credentials: { uid: string; authToken: string; checksumToken: string }
  /** No credentials were given: the emulator's demo merchant's are used. */
  demo: boolean
  json: boolean
}

function number(args: ParsedArgs, name: string, fallback: number, min: number, max: number, integer = false): number {
  const text = args.string(name)
  if (text === undefined) return fallback
  const value = Number(text)
  if (!(Number.isFinite(value) && value >= min && value <= max && (!integer || Number.isInteger(value))))
    throw new UsageError(`--${name} must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`)
  return value
}

function webUrl(text: string | undefined, flag: string): string | undefined {
  if (text === undefined) return undefined
  if (!/^https?:\/\/[^/]/.test(text) || !URL.canParse(text)) throw new UsageError(`--${flag} must be an http or https URL`)
  return text
}

/** The three credentials from flags or FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN; messages name sources, never values. */
function credentialsOf(args: ParsedArgs, env: NodeJS.ProcessEnv): { credentials: RehearsalOptions['credentials']; demo: boolean } {
  const sources = [
    ['uid', 'FPX_UID', UUID_PATTERN, 'a UUID'],
    ['auth-token', 'FPX_AUTH_TOKEN', AUTH_TOKEN_PATTERN, '20 letters or digits'],
    ['checksum-token', 'FPX_CHECKSUM_TOKEN', CHECKSUM_TOKEN_PATTERN, '64 lowercase hexadecimal characters'],
  ] as const
  const values = sources.map(([flag, variable]) => args.string(flag) ?? (env[variable] || undefined))
  if (values.every((value) => value === undefined)) {
    const demo = DEMO_MERCHANT.credentials?.[0] as { uid: string; authToken: string; checksumToken: string }
    return { credentials: { uid: demo.uid, authToken: demo.authToken, checksumToken: demo.checksumToken }, demo: true }
  }
  sources.forEach(([flag, variable, pattern, shape], index) => {
    const value = values[index]
    if (value === undefined) throw new UsageError(`give all three credentials or none: set ${variable} or pass --${flag}`)
    if (!pattern.test(value)) throw new UsageError(`the ${args.string(flag) === undefined ? variable : `--${flag}`} value is not ${shape}`)
  })
  const [uid, authToken, checksumToken] = values as [string, string, string]
  return { credentials: { uid, authToken, checksumToken }, demo: false }
}

export function readOptions(args: ParsedArgs, env: NodeJS.ProcessEnv): RehearsalOptions {
  const callbackUrl = webUrl(args.string('callback-url'), 'callback-url')
  if (callbackUrl === undefined) throw new UsageError('say where your callback route is: --callback-url http://127.0.0.1:3000/fpx/callback')
  const failures = number(args, 'failures', 0.1, 0, 1)
  const b2b1 = number(args, 'b2b1', 0.1, 0, 1)
  if (failures + b2b1 > 1) throw new UsageError('--failures and --b2b1 together must be at most 1')
  // The emulator's root, whichever address of it was pasted: its base URL ends in /api, its control API in /__emulator.
  const emulatorUrl = webUrl(args.string('emulator'), 'emulator')?.replace(/\/+$/, '').replace(/\/(api|__emulator)$/, '')
  return {
    callbackUrl,
    redirectUrl: webUrl(args.string('redirect-url'), 'redirect-url'),
    rate: number(args, 'rate', 10, 0.1, 10_000),
    duration: number(args, 'duration', 30, 0.1, 86_400),
    duplicates: number(args, 'duplicates', 1, 0, 10, true),
    failures,
    b2b1,
    approvalDelayMs: number(args, 'approval-delay', 2, 0, 3600) * 1000,
    settle: number(args, 'settle', 15, 0, 3600),
    port: number(args, 'port', 4010, 0, 65_535, true),
    emulatorUrl,
    ...credentialsOf(args, env),
    json: args.boolean('json'),
  }
}

/** The emulator started here knows one merchant: the one rehearsing, with the B2B1 module on. */
export function emulatorSetup(credentials: RehearsalOptions['credentials']): EmulatorConfig {
  return { merchants: [{ id: 'rehearsal', name: 'Rehearsal Merchant', b2b1: true, credentials: [{ name: 'Rehearsal API', ...credentials }] }], partners: [] }
}

interface DeliveryJson {
  exchange_number: string
  reason: string
  state: string
  attempts: unknown[]
}

const UNSETTLED = new Set(['held', 'scheduled', 'sending'])

/** The run's callbacks in the emulator's log, once none is left to send or retry, or after `seconds`. */
export async function settleCallbacks(emulatorUrl: string, exchanges: ReadonlySet<string>, seconds: number): Promise<DeliveryJson[]> {
  const deadline = performance.now() + seconds * 1000
  for (;;) {
    // The whole log, page by page: the control API filters by one exchange_number at most.
    const all: DeliveryJson[] = []
    for (let page: number | null = 1; page !== null; ) {
      const response = await fetch(`${emulatorUrl}/__emulator/deliveries?per_page=1000&page=${page}`)
      const body = (await response.json()) as { deliveries: DeliveryJson[]; next_page: number | null }
      all.push(...body.deliveries)
      page = body.next_page
    }
    const ours = all.filter((delivery) => exchanges.has(delivery.exchange_number))
    if (!ours.some((delivery) => UNSETTLED.has(delivery.state)) || performance.now() >= deadline) return ours
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

export interface CallbackSummary {
  results: number
  duplicates: number
  retried: number
  gaveUp: number
  unsettled: number
}

export function callbackSummary(deliveries: readonly DeliveryJson[]): CallbackSummary {
  return {
    results: deliveries.filter((delivery) => delivery.reason === 'result').length,
    duplicates: deliveries.filter((delivery) => delivery.reason === 'duplicate').length,
    retried: deliveries.filter((delivery) => delivery.attempts.length > 1).length,
    gaveUp: deliveries.filter((delivery) => delivery.state === 'failed').length,
    unsettled: deliveries.filter((delivery) => UNSETTLED.has(delivery.state)).length,
  }
}

export interface Rehearsal {
  options: RehearsalOptions
  tally: Tally
  progress: LoadProgress
  callbacks: CallbackSummary
  saturation: Saturation
  emulatorLog: string[]
  /** Why the payments stopped before --duration, if they did. */
  stoppedEarly: string | undefined
}

const ms = (value: number) => (Number.isNaN(value) ? '-' : value >= 100 ? value.toFixed(0) : value.toFixed(1))
const listed = (tally: Record<string, number>) =>
  Object.entries(tally)
    .sort((a, b) => b[1] - a[1])
    .map(([key, n]) => `${key} ×${n}`)
    .join(', ') || 'none'

/** The report, and how many errors it counts (the exit code's reason). */
export function reportText(run: Rehearsal): { text: string; json: Record<string, unknown>; errors: number } {
  const { options, tally, progress, callbacks } = run
  const latencies = [...tally.latencies]
  const latency = { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? Number.NaN }
  const emulatorMs = [...progress.emulatorMs]
  const emulator = { p50: percentile(emulatorMs, 50), p99: percentile(emulatorMs, 99) }
  const emulatorErrors = Object.values(progress.emulatorErrors).reduce((sum, n) => sum + n, 0)
  const errors = tally.errors + emulatorErrors + callbacks.gaveUp + callbacks.unsettled
  const span = tally.lastAt === undefined || tally.firstAt === undefined ? 0 : (tally.lastAt - tally.firstAt) / 1000
  // The rate while payments were being made: the tail (approvals, retries) would dilute it.
  const during = tally.seconds.filter((second) => second.at <= Math.ceil(options.duration))
  const perSecond = during.length === 0 ? tally.answers : during.reduce((sum, second) => sum + second.answers, 0) / during.length
  const { kinds } = progress
  const json = {
    rate: options.rate,
    duration: options.duration,
    payments: { started: progress.started, ...kinds },
    deliveries: { answered: tally.answers, perSecond, lastAnswerAfterSeconds: span },
    latencyMs: latency,
    answers: tally.byRoute,
    handlerErrors: tally.handlerErrors,
    callbacks,
    emulator: { apiMs: emulator, errors: progress.emulatorErrors, logged: run.emulatorLog.length },
    saturation: run.saturation,
    stoppedEarly: run.stoppedEarly ?? null,
    errors,
  }
  const lines = [
    ...(run.stoppedEarly === undefined ? [] : [`Stopped early: ${run.stoppedEarly}.`]),
    `Rehearsal: ${options.duration} s at ${options.rate} payments/s: ${progress.started} payments (${kinds.succeeded} succeeded, ${kinds.failed} failed, ${kinds.b2b1} B2B1 pending then approved)`,
    `Deliveries: ${perSecond.toFixed(1)} per second while the payments were made; ${tally.answers} answered in all, the last ${span.toFixed(1)} s after the first`,
    `Latency: p50 ${ms(latency.p50)} ms, p99 ${ms(latency.p99)} ms, max ${ms(latency.max)} ms`,
    'Answers by route and status:',
    `  callback  ${listed(tally.byRoute.callback)}`,
    `  redirect  ${options.redirectUrl === undefined ? '(no --redirect-url)' : listed(tally.byRoute.redirect)}`,
    `Handler errors (500 handler_failed): ${tally.handlerErrors}`,
    `Emulator: ${callbacks.results} callbacks and ${callbacks.duplicates} duplicates; ${callbacks.retried} retried, ${callbacks.gaveUp} given up, ` +
      `${callbacks.unsettled} still retrying at the end; its API p50 ${ms(emulator.p50)} ms, p99 ${ms(emulator.p99)} ms, failures: ${listed(progress.emulatorErrors)}`,
    ...(run.emulatorLog.length === 0 ? [] : [`Emulator warnings: ${run.emulatorLog.length}, first: ${run.emulatorLog[0]}`]),
    `What gave way first: ${run.saturation.culprit === 'nothing' ? 'nothing' : `the ${run.saturation.culprit}`}: ${run.saturation.why}`,
    `Errors: ${errors}${errors === 0 ? '' : ` (${errorParts(tally.errors, emulatorErrors, callbacks)})`}`,
  ]
  return { text: `${lines.join('\n')}\n`, json, errors }
}

/**
 * What the error count adds up, as it counts: answers (a delivery answered 500 three times is three), failures of
 * the emulator's API, and callbacks the emulator gave up on or was still retrying (those answered with errors too).
 */
function errorParts(answers: number, emulator: number, callbacks: CallbackSummary): string {
  const parts: [number, string][] = [
    [answers, 'answers 4xx/5xx or none'],
    [emulator, "failures of the emulator's API"],
    [callbacks.gaveUp, 'callbacks given up'],
    [callbacks.unsettled, 'callbacks still retrying at the end'],
  ]
  return parts
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${n} ${what}`)
    .join(', ')
}
