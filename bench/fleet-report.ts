/**
 * bench/fleet.ts's verdicts and printing: one line per step while it runs, the issue's markdown table at the end.
 */

export const COLUMN_TITLES = {
  redis: 'Redis',
  'redis-confirm': 'Redis + confirmation',
  'postgres-confirm': 'PostgreSQL + confirmation',
  naive: 'naive',
} as const

export type ColumnName = keyof typeof COLUMN_TITLES

/** What a step cost the store, per delivery the receivers answered. */
export type StoreWork =
  | { kind: 'redis'; roundTrips: number; commands: number; cpuMs: number; top: [string, number][] }
  | { kind: 'postgres'; statements: number; transactions: number; rowsRead: number; rowsWritten: number; databaseRows: number; cpuMs: number }

export interface Step {
  rate: number
  /** The rate the deliveries went out at (fleet-load.ts): the offered rate unless the emulator fell behind. */
  sent: number
  /** 99th percentile of the emulator's create + complete, ms. */
  emulatorApiP99: number
  deliveries: number
  payments: number
  latency: { p50: number; p99: number; max: number }
  /** Everything that was not a success, by route and answer ("callback 409", "create ECONNRESET", ...). */
  errors: Record<string, number>
  /** Callbacks answered 409 or 503 (come back later), by route and answer: not errors unless BENCH_STRICT=1. */
  toldToRetry: Record<string, number>
  redirects: number
  /** Redirect answers a buyer would see as an error: 4xx, 5xx or none. */
  errorPages: number
  /** Handler runs against payment states: both equal when each state ran its handler exactly once. */
  handlerRuns: number
  distinctStates: number
  cpu: {
    emulatorMs: number
    receiversMs: number
    loadPercent: number
    /** The whole machine's busy share (all CPUs): near 100 % the step measured the machine, not one part. */
    machinePercent: number
    emulatorLagMs: number
    receiverLagMs: number
    loadLagMs: number
  }
  store: StoreWork | undefined
  /** What the receivers logged as warnings or errors: not failures by themselves, but worth reading. */
  warnings: number
  firstWarnings: string[]
  passed: boolean
  reasons: string[]
}

/** Nearest-rank percentile of `values` (sorted in place). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  values.sort((a, b) => a - b)
  return values[Math.min(values.length, Math.max(1, Math.ceil((p / 100) * values.length))) - 1] as number
}

const P99_LIMIT_MS = 1000

/** Why a step does not count as held: errors, latency, a schedule the load generator could not keep, lost or doubled handler runs. */
export function judge(step: Omit<Step, 'passed' | 'reasons'>, startLagMs: number): string[] {
  const reasons: string[] = []
  const errors = Object.values(step.errors).reduce((sum, n) => sum + n, 0)
  if (errors > 0) reasons.push(`${errors} errors`)
  if (!(step.latency.p99 <= P99_LIMIT_MS)) reasons.push(`p99 ${step.latency.p99.toFixed(0)} ms`)
  // Started late, or sent late, the offered rate was not offered: the load generator (or the machine) fell
  // behind, or the emulator answered each creation and completion later than the one before.
  if (startLagMs > 250) reasons.push(`load generator behind schedule by ${startLagMs.toFixed(0)} ms`)
  if (!(step.sent >= 0.95 * step.rate))
    reasons.push(`the emulator fell behind: deliveries went out at ${step.sent.toFixed(0)}/s (its API p99 ${step.emulatorApiP99.toFixed(0)} ms)`)
  if (step.handlerRuns !== step.payments || step.distinctStates !== step.payments)
    reasons.push(`${step.handlerRuns} handler runs for ${step.distinctStates} distinct of ${step.payments} payment states`)
  return reasons
}

function storeShort(work: StoreWork | undefined): string {
  if (work === undefined) return 'store -'
  if (work.kind === 'redis') return `Redis ${work.roundTrips.toFixed(1)} round trips/delivery`
  return `PostgreSQL ${work.statements.toFixed(1)} statements, ${work.transactions.toFixed(1)} transactions/delivery`
}

const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))

export function stepLine(name: ColumnName, step: Step): string {
  const retries = Object.entries(step.toldToRetry).map(([key, n]) => `${key} ×${n} (told to retry)`)
  const errors = [...Object.entries(step.errors).map(([key, n]) => `${key} ×${n}`), ...retries].join(', ')
  return (
    `${COLUMN_TITLES[name].padEnd(26)} ${String(step.rate).padStart(5)}/s offered, ${step.sent.toFixed(0).padStart(5)}/s sent; ` +
    `p50 ${ms(step.latency.p50)} p99 ${ms(step.latency.p99)} max ${ms(step.latency.max)} ms; ` +
    `CPU/delivery emulator ${step.cpu.emulatorMs.toFixed(2)} receivers ${step.cpu.receiversMs.toFixed(2)} ms; load gen ${step.cpu.loadPercent.toFixed(0)} %, machine ${step.cpu.machinePercent.toFixed(0)} % busy; ` +
    `emulator API p99 ${ms(step.emulatorApiP99)} ms; lag p99 emu ${ms(step.cpu.emulatorLagMs)} rcv ${ms(step.cpu.receiverLagMs)} gen ${ms(step.cpu.loadLagMs)} ms; ${storeShort(step.store)}` +
    `${step.errorPages > 0 ? `; ${step.errorPages} error pages` : ''}` +
    `  ${step.passed ? 'held' : `NOT held (${step.reasons.join('; ')})`}${errors === '' ? '' : `\n${' '.repeat(27)}${errors}`}` +
    `${step.warnings === 0 ? '' : `\n${' '.repeat(27)}receivers logged ${step.warnings} warnings: ${step.firstWarnings.join(' | ')}`}`
  )
}

export interface ColumnResult {
  name: ColumnName
  steps: Step[]
  /** The highest step held (p99 ≤ 1 s, no errors), the step at the reference rate, the first step not held. */
  best: Step | undefined
  atReference: Step | undefined
  /** The first step measured (the lowest rate): where store work is read. */
  atFirst: Step | undefined
  firstFailing: Step | undefined
}

function storeCell(work: StoreWork | undefined): string {
  if (work === undefined) return '-'
  if (work.kind === 'redis') return `${work.roundTrips.toFixed(1)} round trips, ${work.commands.toFixed(1)} commands; Redis ${work.cpuMs.toFixed(2)} ms CPU`
  return (
    `${work.statements.toFixed(1)} statements, ${work.transactions.toFixed(1)} transactions, ${work.rowsRead.toFixed(1)} rows read ` +
    `(${work.databaseRows.toFixed(0)} in the database), ${work.rowsWritten.toFixed(1)} written; PostgreSQL ${work.cpuMs.toFixed(2)} ms CPU`
  )
}

/** The issue's table: one column per receiver, the ratios to the naive receiver measured in the same run. */
export function renderTable(columns: readonly ColumnResult[], referenceRate: number): string {
  const naive = columns.find((column) => column.name === 'naive')?.best
  const row = (title: string, cell: (column: ColumnResult) => string) => `| ${title} | ${columns.map(cell).join(' | ')} |`
  const ratio = (value: number | undefined, base: number | undefined) =>
    value === undefined || base === undefined || base === 0 ? '-' : `${(value / base).toFixed(2)}`
  const lines = [
    `| | ${columns.map((column) => COLUMN_TITLES[column.name]).join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|`,
    row('highest rate with p99 ≤ 1 s, no errors', (c) => (c.best === undefined ? 'none held' : `${c.best.rate} deliveries/s`)),
    row('ratio to naive (same run)', (c) => ratio(c.best?.rate, naive?.rate)),
    row('why the next rate was not held', (c) => (c.firstFailing === undefined ? 'no rate failed' : `${c.firstFailing.rate}/s: ${c.firstFailing.reasons.join('; ')}`)),
    row(`latency at ${referenceRate} deliveries/s, p50 / p99`, (c) => (c.atReference === undefined ? '-' : `${ms(c.atReference.latency.p50)} / ${ms(c.atReference.latency.p99)} ms`)),
    row('store work per delivery (at the first rate)', (c) => (c.atFirst === undefined ? '-' : `${storeCell(c.atFirst.store)} (at ${c.atFirst.rate}/s)`)),
    row('callbacks told to retry (409, 503) at the highest rate held', (c) =>
      c.best === undefined ? '-' : `${Object.values(c.best.toldToRetry).reduce((sum, n) => sum + n, 0)} of ${c.best.deliveries - c.best.redirects}`,
    ),
    row('buyers shown an error page at the first failing rate', (c) =>
      c.firstFailing === undefined ? 'no rate failed' : `${c.firstFailing.errorPages} of ${c.firstFailing.redirects} (at ${c.firstFailing.rate}/s)`,
    ),
    row('CPU per delivery at the highest rate: receivers / emulator', (c) =>
      c.best === undefined
        ? '-'
        : `${c.best.cpu.receiversMs.toFixed(2)} / ${c.best.cpu.emulatorMs.toFixed(2)} ms (emulator ${c.best.cpu.emulatorMs < c.best.cpu.receiversMs ? 'cheaper' : 'NOT cheaper'})`,
    ),
    row('load generator CPU at the highest rate (machine busy)', (c) =>
      c.best === undefined ? '-' : `${c.best.cpu.loadPercent.toFixed(0)} % of a core (${c.best.cpu.machinePercent.toFixed(0)} %)`,
    ),
    row('handler runs per payment state (all steps)', (c) => {
      const runs = c.steps.reduce((sum, step) => sum + step.handlerRuns, 0)
      const states = c.steps.reduce((sum, step) => sum + step.payments, 0)
      return `${runs} / ${states}`
    }),
  ]
  return lines.join('\n')
}

/** Redis commands per delivery by name, largest first: what each delivery's store work is made of. */
export function commandBreakdown(work: StoreWork | undefined): string {
  if (work?.kind !== 'redis') return ''
  return work.top.map(([name, perDelivery]) => `${name} ${perDelivery.toFixed(2)}`).join(', ')
}
