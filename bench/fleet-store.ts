/**
 * What a step of bench/fleet.ts cost the stores, read from the servers themselves:
 *   Redis       INFO commandstats (commands, those run inside scripts included) and INFO cpu; both are the whole
 *               server's, so another user of the same Redis during a step shows up in them;
 *   PostgreSQL  pg_stat_database (transactions) of the bench's own database, pg_stat_user_tables (rows read and
 *               written) of the column's tables, and the CPU of the fleet's backends from /proc by their pid.
 *               pg_stat_statements is not assumed: statements are counted by the receivers' own driver.
 */
import { readFileSync } from 'node:fs'
import type { Redis } from 'ioredis'
import pg from 'pg'

export interface RedisSample {
  calls: Map<string, number>
  cpuSeconds: number
}

export async function sampleRedis(redis: Redis): Promise<RedisSample> {
  const calls = new Map<string, number>()
  for (const [, name, count] of String(await redis.call('INFO', 'commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(name as string, Number(count))
  const cpu = String(await redis.call('INFO', 'cpu'))
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return { calls, cpuSeconds: seconds('used_cpu_user') + seconds('used_cpu_sys') }
}

export interface RedisWork {
  /** Per command name, calls during the step (INFO, the bench's own, left out). */
  commands: Map<string, number>
  total: number
  cpuSeconds: number
}

export function redisWork(before: RedisSample, after: RedisSample): RedisWork {
  const commands = new Map<string, number>()
  let total = 0
  for (const [name, calls] of after.calls) {
    const delta = calls - (before.calls.get(name) ?? 0)
    if (delta <= 0 || name === 'info') continue
    commands.set(name, delta)
    total += delta
  }
  return { commands, total, cpuSeconds: after.cpuSeconds - before.cpuSeconds }
}

export interface PgSample {
  transactions: number
  /** pg_stat_database's tup_returned + tup_fetched: the whole database's, catalog lookups included. */
  databaseRows: number
  /** The column's tables: rows read by sequential scans and fetched through indexes; rows inserted, updated, deleted. */
  tableRowsRead: number
  tableRowsWritten: number
  /** CPU seconds of each backend serving the fleet, by pid. */
  backends: Map<number, number>
}

const TICKS_PER_SECOND = 100

/** utime + stime of a process, from /proc (Linux); undefined when it is gone or unreadable. */
function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name in parentheses may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/**
 * `admin` is connected to another database than the bench's, so reading the statistics adds no transaction to
 * them; `bench` reads the bench database's per-table statistics, visible only from inside it.
 */
export async function samplePg(admin: pg.Client, bench: pg.Client, database: string, tablePrefix: string, applicationName: string): Promise<PgSample> {
  const totals = await admin.query<{ transactions: string; rows: string }>(
    'SELECT xact_commit + xact_rollback AS transactions, tup_returned + tup_fetched AS rows FROM pg_stat_database WHERE datname = $1',
    [database],
  )
  const tables = await bench.query<{ read: string; written: string }>(
    `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0) AS read,
            coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS written
       FROM pg_stat_user_tables WHERE relname LIKE $1`,
    [`${tablePrefix}%`],
  )
  const pids = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName])
  const backends = new Map<number, number>()
  for (const { pid } of pids.rows) {
    const seconds = processCpuSeconds(pid)
    if (seconds !== undefined) backends.set(pid, seconds)
  }
  return {
    transactions: Number(totals.rows[0]?.transactions ?? 0),
    databaseRows: Number(totals.rows[0]?.rows ?? 0),
    tableRowsRead: Number(tables.rows[0]?.read ?? 0),
    tableRowsWritten: Number(tables.rows[0]?.written ?? 0),
    backends,
  }
}

export interface PgWork {
  transactions: number
  databaseRows: number
  tableRowsRead: number
  tableRowsWritten: number
  /** CPU of the fleet's backends; a backend that appeared during the step counts from zero. */
  cpuSeconds: number
}

export function pgWork(before: PgSample, after: PgSample): PgWork {
  let cpuSeconds = 0
  for (const [pid, seconds] of after.backends) cpuSeconds += seconds - (before.backends.get(pid) ?? 0)
  return {
    transactions: after.transactions - before.transactions,
    databaseRows: after.databaseRows - before.databaseRows,
    tableRowsRead: after.tableRowsRead - before.tableRowsRead,
    tableRowsWritten: after.tableRowsWritten - before.tableRowsWritten,
    cpuSeconds,
  }
}

/**
 * The bench's own database beside `url`'s (same server, `fpx_fleet_bench`), created when missing, so that its
 * transaction counts are the fleet's alone. Returns its URL, or `url` itself when it cannot be created.
 */
export async function benchDatabase(url: string, admin: pg.Client): Promise<{ url: string; name: string; own: boolean }> {
  const name = 'fpx_fleet_bench'
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`)
    const own = new URL(url)
    own.pathname = `/${name}`
    return { url: own.toString(), name, own: true }
  } catch (error) {
    console.warn(`cannot create database ${name} (${(error as Error).message}): measuring in ${new URL(url).pathname.slice(1)}, shared with anyone else using it`)
    return { url, name: new URL(url).pathname.slice(1), own: false }
  }
}

export { pg }
