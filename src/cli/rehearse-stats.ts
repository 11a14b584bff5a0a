/**
 * What a rehearsal saw, second by second and in all: the app's answers by route and status, latency, errors, and
 * which part gave way first. A second counts against the app when its answers slowed down while the emulator and
 * the load generator still had room; against the store when the app said so (503 store_unavailable); against the
 * emulator when this process (emulator and load generator together) ran out of CPU or its event loop lagged, or
 * a separate emulator's API slowed down.
 */
import { cpus } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { AppAnswer } from './rehearse-recorder.js'

export interface Second {
  /** Seconds since the start, at the end of this second. */
  at: number
  answers: number
  p50: number
  p99: number
  errors: number
  /** Deliveries the app did not answer at all (refused connection, time-out). */
  unanswered: number
  storeErrors: number
  /** This process: share of one core, and its event loop's 99th percentile delay (ms). */
  cpuPercent: number
  lagMs: number
  /** The whole machine's busy share, all CPUs: other work on it (the app itself, if local) included. */
  machinePercent: number
  /** The emulator's API, median answer time this second (ms); NaN without calls. */
  emulatorP50: number
}

export type Culprit = 'nothing' | 'app' | 'store' | 'emulator'

export interface Saturation {
  culprit: Culprit
  /** Seconds since the start of the first second showing it; null for nothing. */
  at: number | null
  why: string
}

/** Nearest-rank percentile; sorts `values` in place. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  values.sort((a, b) => a - b)
  return values[Math.min(values.length, Math.max(1, Math.ceil((p / 100) * values.length))) - 1] as number
}

export const isError = (answer: Pick<AppAnswer, 'status'>) => answer.status === 0 || answer.status >= 400

/** How an answer is listed: its status and refusal code (`503 store_unavailable`), or why there was none. */
export const answerKey = (answer: Pick<AppAnswer, 'status' | 'code'>) =>
  answer.status === 0 ? `no answer (${answer.code ?? 'unknown'})` : answer.code === undefined ? String(answer.status) : `${answer.status} ${answer.code}`

export class Tally {
  readonly latencies: number[] = []
  readonly byRoute: Record<AppAnswer['route'], Record<string, number>> = { callback: {}, redirect: {} }
  readonly seconds: Second[] = []
  answers = 0
  errors = 0
  handlerErrors = 0
  /** When the first and the last answer came (performance.now()): deliveries per second are counted between them. */
  firstAt: number | undefined
  lastAt: number | undefined
  private current: AppAnswer[] = []

  record(answer: AppAnswer): void {
    this.answers++
    this.firstAt ??= answer.at - answer.ms
    this.lastAt = answer.at
    this.latencies.push(answer.ms)
    const key = answerKey(answer)
    this.byRoute[answer.route][key] = (this.byRoute[answer.route][key] ?? 0) + 1
    if (isError(answer)) this.errors++
    if (answer.code === 'handler_failed') this.handlerErrors++
    this.current.push(answer)
  }

  /** Closes the second that just ended. */
  tick(at: number, health: Health, emulatorMs: number[]): Second {
    const latencies = this.current.map((answer) => answer.ms)
    const second: Second = {
      at,
      answers: this.current.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      errors: this.current.filter(isError).length,
      unanswered: this.current.filter((answer) => answer.status === 0).length,
      storeErrors: this.current.filter((answer) => answer.code === 'store_unavailable').length,
      ...health,
      emulatorP50: percentile(emulatorMs, 50),
    }
    this.current = []
    this.seconds.push(second)
    return second
  }
}

export interface Health {
  cpuPercent: number
  lagMs: number
  machinePercent: number
}

function machineTimes(): { busy: number; total: number } {
  let busy = 0
  let total = 0
  for (const { times } of cpus()) {
    const all = times.user + times.nice + times.sys + times.idle + times.irq
    total += all
    busy += all - times.idle
  }
  return { busy, total }
}

/** This process's CPU and event-loop delay, and the machine's CPU, since the previous reading. */
export class HealthMeter {
  private readonly loop = monitorEventLoopDelay({ resolution: 10 })
  private cpu = process.cpuUsage()
  private machine = machineTimes()
  private at = performance.now()

  constructor() {
    this.loop.enable()
  }

  read(): Health {
    const [now, used, machine] = [performance.now(), process.cpuUsage(this.cpu), machineTimes()]
    const health = {
      cpuPercent: ((used.user + used.system) / 1000 / (now - this.at)) * 100,
      lagMs: this.loop.count === 0 ? 0 : this.loop.percentile(99) / 1e6,
      machinePercent: ((machine.busy - this.machine.busy) / Math.max(1, machine.total - this.machine.total)) * 100,
    }
    ;[this.cpu, this.machine, this.at] = [process.cpuUsage(), machine, now]
    this.loop.reset()
    return health
  }

  stop(): void {
    this.loop.disable()
  }
}

const BUSY_CPU_PERCENT = 90
const BUSY_LAG_MS = 100
/** Slower than the calm start by this much: a machine shared with other work swings by less within a second. */
const slowerThan = (value: number, baseline: number) => value > Math.max(3 * baseline, baseline + 100)
const fixed = (ms: number) => (Number.isNaN(ms) ? '-' : ms >= 100 ? ms.toFixed(0) : ms.toFixed(1))

/**
 * The first second that shows a part giving way, and which part. `inProcess`: the emulator shares this process.
 * A refusal that names the store, or a delivery left unanswered, counts at once; slowness only when two seconds
 * in a row show it (with enough answers to tell), against the median of the first three seconds, so one pause of
 * a busy machine is not taken for a trend.
 */
export function saturation(seconds: readonly Second[], inProcess: boolean, waitingAtEnd = 0): Saturation {
  const verdict = partGivingWay(seconds, inProcess)
  // A delivery the app still had not answered when the run ended (it hangs) is no answer: never "too few to tell".
  if (verdict.culprit !== 'nothing' || waitingAtEnd === 0) return verdict
  const at = seconds.at(-1)?.at ?? 0
  return { culprit: 'app', at, why: `${waitingAtEnd} ${waitingAtEnd === 1 ? 'delivery was' : 'deliveries were'} still waiting for its answer when the run ended at ${at} s` }
}

function partGivingWay(seconds: readonly Second[], inProcess: boolean): Saturation {
  const telling = (second: Second | undefined) => second !== undefined && second.answers >= 5
  const calm = seconds.filter(telling).slice(0, 3)
  if (calm.length === 0) return { culprit: 'nothing', at: null, why: 'too few answers to tell' }
  const base = percentile(calm.map((second) => second.p50), 50)
  const emulatorBase = percentile(seconds.map((second) => second.emulatorP50).filter((ms) => !Number.isNaN(ms)).slice(0, 3), 50)
  const slowApp = (second: Second | undefined) => telling(second) && (slowerThan((second as Second).p50, base) || (second as Second).p99 > 1000)
  const busy = (second: Second) => (inProcess ? second.cpuPercent > BUSY_CPU_PERCENT || second.lagMs > BUSY_LAG_MS : slowerThan(second.emulatorP50, emulatorBase))
  const here = (second: Second) =>
    `this process (emulator and load generator) used ${second.cpuPercent.toFixed(0)} % of a core with an event loop lag of ${fixed(second.lagMs)} ms ` +
    `(the machine ${second.machinePercent.toFixed(0)} % busy)`
  for (const [index, second] of seconds.entries()) {
    if (second.unanswered > 0)
      return { culprit: 'app', at: second.at, why: `it did not answer ${second.unanswered} deliveries in the second ending at ${second.at} s` }
    if (second.storeErrors > 0)
      return { culprit: 'store', at: second.at, why: `the app answered 503 store_unavailable ${second.storeErrors} times in the second ending at ${second.at} s` }
    const next = seconds[index + 1]
    if (!(slowApp(second) && slowApp(next))) continue
    if (busy(second) && busy(next as Second))
      return {
        culprit: 'emulator',
        at: second.at,
        why: inProcess
          ? `${here(second)} by ${second.at} s, while the app's answers took p50 ${fixed(second.p50)} ms`
          : `the emulator's API answered in ${fixed(second.emulatorP50)} ms (at first ${fixed(emulatorBase)} ms) by ${second.at} s`,
      }
    return {
      culprit: 'app',
      at: second.at,
      why:
        `its answers took p50 ${fixed(second.p50)} ms, p99 ${fixed(second.p99)} ms in the second ending at ${second.at} s and the next ` +
        `(at first p50 ${fixed(base)} ms), while ${inProcess ? here(second) : `the emulator's API answered in ${fixed(second.emulatorP50)} ms`}`,
    }
  }
  const errors = seconds.reduce((sum, second) => sum + second.errors, 0)
  const held = "the app's latency held steady and the store and the emulator kept up"
  // Steady latency is no comfort when the answers were errors: the merchant must not read this as "it coped".
  if (errors > 0) return { culprit: 'nothing', at: null, why: `${held}, but the app answered ${errors} deliveries with an error (see the answers)` }
  return { culprit: 'nothing', at: null, why: held }
}
