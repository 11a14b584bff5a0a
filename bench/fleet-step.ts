/**
 * One step of bench/fleet.ts: a fixed offered rate for a few seconds against a running fleet, and everything it
 * cost: latency and answers per route, CPU per delivery of each process, store work, handler runs.
 */
import { readFileSync } from 'node:fs'
import type { Redis } from 'ioredis'
import type { Child, ProcessSample } from './fleet-child.js'
import { processSample } from './fleet-child.js'
import type { CallbackSummary } from './fleet-emulator.js'
import { type FleetTarget, runLoad } from './fleet-load.js'
import type { ColumnKind, ReceiverConfig, ReceiverReport } from './fleet-receiver.js'
import { judge, percentile, type Step, type StoreWork } from './fleet-report.js'
import { type pg, pgWork, redisWork, samplePg, sampleRedis } from './fleet-store.js'

export interface StepContext {
  kind: ColumnKind
  fleet: readonly Child[]
  emulator: Child
  target: FleetTarget
  redis: Redis
  admin: pg.Client
  bench: pg.Client
  database: string
  config: ReceiverConfig
  stepSeconds: number
  settleSeconds: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface CpuSnapshot {
  at: number
  /** The machine's CPU time so far (/proc/stat, clock ticks), all of it and the busy part: others' work included. */
  machine: { total: number; busy: number }
  load: ProcessSample
  emulator: ProcessSample
  receivers: ProcessSample[]
}

async function cpuSnapshot(context: StepContext): Promise<CpuSnapshot> {
  const [emulator, receivers] = await Promise.all([context.emulator.call<ProcessSample>('sample'), Promise.all(context.fleet.map((child) => child.call<ProcessSample>('sample')))])
  return { at: performance.now(), machine: machineCpu(), load: processSample(), emulator, receivers }
}

function machineCpu(): { total: number; busy: number } {
  try {
    const ticks = (/^cpu\s+(.*)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1] ?? '').split(/\s+/).map(Number)
    const total = ticks.reduce((sum, n) => sum + n, 0)
    // idle and iowait are the fourth and fifth fields.
    return { total, busy: total - (ticks[3] ?? 0) - (ticks[4] ?? 0) }
  } catch {
    return { total: Number.NaN, busy: Number.NaN }
  }
}

type StoreSample = { kind: 'redis'; sample: Awaited<ReturnType<typeof sampleRedis>> } | { kind: 'postgres'; sample: Awaited<ReturnType<typeof samplePg>> }

async function sampleStore(context: StepContext): Promise<StoreSample> {
  if (context.kind !== 'postgres-confirm') return { kind: 'redis', sample: await sampleRedis(context.redis) }
  return { kind: 'postgres', sample: await samplePg(context.admin, context.bench, context.database, context.config.table, context.config.applicationName) }
}

/** Waits until the emulator has no callback left to send or retry, or `seconds` pass. */
async function settle(context: StepContext): Promise<CallbackSummary> {
  const deadline = performance.now() + context.settleSeconds * 1000
  for (;;) {
    const summary = await context.emulator.call<CallbackSummary>('summary')
    if (summary.unsettled === 0 || performance.now() > deadline) return summary
    await sleep(500)
  }
}

const publishPgStats = async (context: StepContext) => (await Promise.all(context.fleet.map((child) => child.call<number>('publishPgStats')))).reduce((a, b) => a + b, 0)

function storeWork(before: StoreSample, after: StoreSample, reports: ReceiverReport[], deliveries: number, statsTransactions: number): StoreWork {
  const roundTrips = reports.reduce((sum, report) => sum + report.roundTrips, 0) / deliveries
  if (before.kind === 'redis' && after.kind === 'redis') {
    const work = redisWork(before.sample, after.sample)
    const top = [...work.commands].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, calls]) => [name, calls / deliveries] as [string, number])
    return { kind: 'redis', roundTrips, commands: work.total / deliveries, cpuMs: (work.cpuSeconds * 1000) / deliveries, top }
  }
  if (before.kind !== 'postgres' || after.kind !== 'postgres') throw new Error('store samples of different kinds')
  const work = pgWork(before.sample, after.sample)
  return {
    kind: 'postgres',
    statements: roundTrips,
    // The statements that made the backends publish their statistics at the start are counted by the end's.
    transactions: (work.transactions - statsTransactions) / deliveries,
    rowsRead: work.tableRowsRead / deliveries,
    rowsWritten: work.tableRowsWritten / deliveries,
    databaseRows: work.databaseRows / deliveries,
    cpuMs: (work.cpuSeconds * 1000) / deliveries,
  }
}

const tally = (into: Record<string, number>, key: string, n: number) => void (into[key] = (into[key] ?? 0) + n)
const isSuccess = (route: string, answer: string) => (route === 'redirect' ? answer === '303' || answer === '200' : /^2\d\d$/.test(answer))
/**
 * A callback answered 409 or 503 is told to come back (Retry-After), which the service does: issue 37 allows a
 * delivery that finds its payment being handled elsewhere to answer so. Counted apart, not as errors, unless
 * BENCH_STRICT=1 (the first table, which counted them); that nothing is lost is checked separately (every
 * emulator callback settles 200, every payment state runs its handler once).
 */
const STRICT = process.env.BENCH_STRICT === '1'
const isRetry = (route: string, answer: string) => !STRICT && route !== 'redirect' && (answer === '409' || answer === '503')

export async function measureStep(context: StepContext, rate: number, orderPrefix: string): Promise<Step> {
  await context.emulator.call('reset')
  const statsTransactions = await publishPgStats(context)
  const storeBefore = await sampleStore(context)
  await Promise.all(context.fleet.map((child) => child.call('report')))
  const before = await cpuSnapshot(context)
  const load = await runLoad(context.target, rate, context.stepSeconds, orderPrefix)
  // Time for the last callbacks and the receivers' background writes (the timeline) to finish.
  await sleep(500)
  const after = await cpuSnapshot(context)
  const callbacks = await settle(context)
  const reports = await Promise.all(context.fleet.map((child) => child.call<ReceiverReport>('report')))
  await publishPgStats(context)
  const storeAfter = await sampleStore(context)

  const deliveries = reports.reduce((sum, report) => sum + report.requests.callback + report.requests.redirect, 0)
  const errors: Record<string, number> = {}
  const toldToRetry: Record<string, number> = {}
  const classify = (route: string, answer: string, n: number) => {
    if (isRetry(route, answer)) tally(toldToRetry, `${route} ${answer}`, n)
    else if (!isSuccess(route, answer)) tally(errors, `${route} ${answer}`, n)
  }
  for (const [answer, n] of Object.entries(callbacks.firstAnswers)) classify('callback', answer, n)
  for (const route of ['duplicate', 'redirect'] as const) for (const [answer, n] of Object.entries(load.answers[route])) classify(route, answer, n)
  for (const [what, n] of Object.entries(load.emulatorErrors)) tally(errors, what, n)
  if (load.started < load.planned) tally(errors, 'payments not started (too many in flight)', load.planned - load.started)
  if (callbacks.total < load.completed) tally(errors, 'callbacks the emulator never created', load.completed - callbacks.total)
  if (callbacks.unsettled > 0) tally(errors, `callbacks still unsettled after ${context.settleSeconds} s`, callbacks.unsettled)
  if (callbacks.failed > 0) tally(errors, 'callbacks failed after every retry', callbacks.failed)
  const redirectAnswers = Object.entries(load.answers.redirect)
  const errorPages = redirectAnswers.filter(([answer]) => answer === '0' || !/^\d+$/.test(answer) || Number(answer) >= 400).reduce((sum, [, n]) => sum + n, 0)

  const handled = reports.flatMap((report) => report.handled)
  const latencies = [...callbacks.firstAttemptMs, ...load.latencyMs.duplicate, ...load.latencyMs.redirect]
  const p50 = percentile(latencies, 50)
  const p99 = percentile(latencies, 99)
  const cpuMs = (sampleBefore: ProcessSample, sampleAfter: ProcessSample) => (sampleAfter.cpuMicros - sampleBefore.cpuMicros) / 1000
  const receiversMs = after.receivers.reduce((sum, sample, i) => sum + cpuMs(before.receivers[i] as ProcessSample, sample), 0)
  const per = Math.max(1, deliveries)
  const step: Omit<Step, 'passed' | 'reasons'> = {
    rate,
    sent: load.sentPerSecond,
    emulatorApiP99: percentile(load.emulatorMs, 99),
    deliveries,
    payments: load.completed,
    latency: { p50, p99, max: latencies.at(-1) ?? Number.NaN },
    errors,
    toldToRetry,
    redirects: redirectAnswers.reduce((sum, [, n]) => sum + n, 0),
    errorPages,
    handlerRuns: handled.length,
    distinctStates: new Set(handled).size,
    cpu: {
      emulatorMs: cpuMs(before.emulator, after.emulator) / per,
      receiversMs: receiversMs / per,
      loadPercent: (cpuMs(before.load, after.load) / (after.at - before.at)) * 100,
      machinePercent: ((after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total)) * 100,
      emulatorLagMs: after.emulator.lagP99Ms,
      receiverLagMs: Math.max(...after.receivers.map((sample) => sample.lagP99Ms)),
      loadLagMs: after.load.lagP99Ms,
    },
    store: deliveries > 0 ? storeWork(storeBefore, storeAfter, reports, deliveries, statsTransactions) : undefined,
    warnings: reports.reduce((sum, report) => sum + report.warnings, 0),
    // Each process logs the same warnings: once each, shortened, is enough to know what to look for.
    firstWarnings: [...new Set(reports.flatMap((report) => report.firstWarnings).map((line) => (line.length > 160 ? `${line.slice(0, 160)}…` : line)))].slice(0, 3),
  }
  const reasons = judge(step, load.maxStartLagMs)
  return { ...step, passed: reasons.length === 0, reasons }
}
