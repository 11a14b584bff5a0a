/*
 * Timing and printing for bench/stores.ts: runs an operation many times, one at a time or with a fixed number in
 * flight, and reports ops/s with the p50 and p99 latency of a single operation.
 */

export type Op = (n: number) => Promise<void>

export interface Stats {
  readonly ops: number
  readonly opsPerSec: number
  /** Milliseconds. */
  readonly p50: number
  readonly p99: number
}

export interface Mode {
  readonly label: string
  readonly concurrency: number
}

/** Nearest-rank percentile of sorted samples. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

/**
 * Runs `op` `count` times with `concurrency` in flight, each call given a number never given before (from
 * `next`), and times every call. Latency under concurrency includes the wait behind the others in flight:
 * that is what a delivery sees when the app is busy.
 */
async function drive(op: Op, count: number, concurrency: number, next: () => number, samples?: Float64Array): Promise<number> {
  let started = 0
  const worker = async () => {
    while (started < count) {
      const index = started++
      const n = next()
      const t0 = process.hrtime.bigint()
      await op(n)
      if (samples !== undefined) samples[index] = Number(process.hrtime.bigint() - t0) / 1e6
    }
  }
  const t0 = process.hrtime.bigint()
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return Number(process.hrtime.bigint() - t0) / 1e9
}

/** Warms up with `warmup` calls (untimed, same concurrency), then measures `ops` calls. */
export async function measure(op: Op, ops: number, warmup: number, concurrency: number, next: () => number): Promise<Stats> {
  if (warmup > 0) await drive(op, warmup, concurrency, next)
  const samples = new Float64Array(ops)
  const seconds = await drive(op, ops, concurrency, next, samples)
  samples.sort()
  return { ops, opsPerSec: ops / seconds, p50: percentile(samples, 50), p99: percentile(samples, 99) }
}

export interface Row {
  readonly store: string
  readonly mode: string
  readonly stats: Stats
  /** The bare round trip on the same client, measured in the same mode; none for the memory store. */
  readonly floor?: Stats
  readonly floorName?: string
  /** Two round trips on the same client, as a claim + complete needs at least. */
  readonly floor2?: Stats
  readonly floor2Name?: string
  /** Store time over floor2 time: the median of the rounds' ratios, each round's store run paired with its floor2 run. */
  readonly floor2Ratio?: number
  /** A transactional store's own floor (its statements' least round trips in one transaction), and the median ratio to it. */
  readonly txFloorName?: string
  readonly txFloorRatio?: number
  /** The two round trips writing what the store keeps without its checks (see Opened.shapeFloor), and the median ratio to it. */
  readonly shapeFloorName?: string
  readonly shapeFloorRatio?: number
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '-')
const ratio = (a: number, b: number) => `${fixed(a / b, 2)}x`

/** A plain-text table: it survives being pasted into an issue, unlike console.table's box drawing. */
export function renderTable(rows: readonly Row[]): string {
  const header = ['store', 'mode', 'ops/s', 'p50 ms', 'p99 ms', 'floor', 'floor ops/s', 'floor p50', 'floor p99', 'p50/floor', 'p99/floor', 'floor ops/store ops', '2-RT floor', '2-RT ops/s', 'time / 2-RT (median)']
  const lines = rows.map((row) => {
    const { stats, floor } = row
    return [
      row.store,
      row.mode,
      fixed(stats.opsPerSec, 0),
      fixed(stats.p50, 3),
      fixed(stats.p99, 3),
      row.floorName ?? '-',
      floor ? fixed(floor.opsPerSec, 0) : '-',
      floor ? fixed(floor.p50, 3) : '-',
      floor ? fixed(floor.p99, 3) : '-',
      floor ? ratio(stats.p50, floor.p50) : '-',
      floor ? ratio(stats.p99, floor.p99) : '-',
      floor ? ratio(floor.opsPerSec, stats.opsPerSec) : '-',
      row.floor2Name ?? '-',
      row.floor2 ? fixed(row.floor2.opsPerSec, 0) : '-',
      row.floor2Ratio !== undefined ? `${fixed(row.floor2Ratio, 2)}x` : '-',
    ]
  })
  const table = [header, ...lines]
  const widths = header.map((_, column) => Math.max(...table.map((line) => line[column]!.length)))
  // Names left, numbers right.
  const format = (line: string[]) =>
    line.map((cell, column) => (column < 2 || column === 5 || column === 12 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')
  return [format(header), widths.map((width) => '-'.repeat(width)).join('  '), ...lines.map(format)].join('\n')
}
