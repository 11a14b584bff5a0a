import { randomInt } from 'node:crypto'
import { retryDelayMs } from '../src/emulator/delivery.js'

/*
 * Every knob is an environment variable (SOAK_PAYMENTS=300) or the matching flag (--payments=300), so that the
 * test, `npm run soak` and a person at a terminal drive the same code. The same settings reach the workers
 * through their environment.
 */

export type StoreKind = 'redis' | 'postgres'

export interface SoakConfig {
  stores: StoreKind[]
  payments: number
  workers: number
  kills: number
  /** Payments worked on at once by the driver. */
  concurrency: number
  /** Share of deliveries sent a second time (half of them at the same moment, to another process). */
  duplicateRate: number
  /** Share of handler runs that throw before any effect. */
  failRate: number
  leaseMs: number
  /** Upper bound of a random pause after the handler's effect, widening the window a kill can hit. */
  effectDelayMs: number
  /** Attempts per delivery before it counts as lost. */
  maxAttempts: number
  /** pg connections per worker (the store's pool in transactional mode, the ledger's with Redis). */
  poolSize: number
  seed: number
  /** Keep the ledger, store table and Redis keys for inspection instead of deleting them. */
  keep: boolean
  /**
   * Inbox mode: the receivers answer once a result is in the store's inbox, and every handler fails for
   * `outageMs` from the start of the run, then recovers. fail-rate defaults to 0 then (the outage is the failure).
   */
  inbox: boolean
  outageMs: number
  /** The inbox's longest backoff: after the outage every result must be processed within about this. */
  backoffMaxMs: number
  /**
   * How many backoff periods after recovery the last result may be processed (plus a killed worker's lease): 1
   * measures the promise itself on a quiet machine; the test allows more, as the drain's own length grows with
   * whatever else shares the cores.
   */
  processedWithinPeriods: number
  redisUrl: string
  databaseUrl: string
  /**
   * Crash the store mid-run and start it again: a private Redis or PostgreSQL this run starts (never the system
   * one), so that the restart touches nobody else's tests.
   */
  restartStore: boolean
  /** The private Redis's persistence for --restart-store: none (save '', no AOF), AOF everysec or AOF always. */
  redisPersistence: 'none' | 'everysec' | 'always'
  /** How long the store stays down. */
  downMs: number
}

/**
 * The emulator's whole retry window with its defaults (docs/emulator.md: 8 attempts, waits doubling from 1 s,
 * capped at 5 min): the time from a callback's first attempt to its last. A handler outage longer than this loses
 * the result for good without an inbox.
 */
export const EMULATOR_RETRY_WINDOW_MS = Array.from({ length: 7 }, (_, i) => retryDelayMs(i + 1, 1000, 5 * 60_000)).reduce((a, b) => a + b, 0)

const DEFAULTS = {
  payments: 10_000,
  workers: 4,
  kills: 2,
  concurrency: 128,
  duplicateRate: 0.3,
  failRate: 0.1,
  leaseMs: 3000,
  effectDelayMs: 2,
  maxAttempts: 60,
  poolSize: 10,
}

function persistence(text: string): SoakConfig['redisPersistence'] {
  if (text === 'no' || text === 'none') return 'none'
  if (text === 'everysec' || text === 'always') return text
  throw new Error(`redis-aof must be no, everysec or always, not "${text}"`)
}

/** `--payments=300 --store redis` → { payments: '300', store: 'redis' }. */
function parseFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"; use --name=value`)
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
    const next = argv[i + 1]
    if (inline !== undefined) flags.set(name, inline)
    else if (next !== undefined && !next.startsWith('--')) flags.set(name, argv[++i] as string)
    else flags.set(name, 'true')
  }
  return flags
}

/**
 * The soaks' flags and their environment variables (`--payments=300` or SOAK_PAYMENTS=300), read and checked;
 * `done()` refuses a flag nobody asked for: a misspelt flag silently running the defaults would soak the wrong thing.
 */
export function flagReader(argv: readonly string[], env: NodeJS.ProcessEnv) {
  const flags = parseFlags(argv)
  const known = new Set<string>()
  const raw = (name: string): string | undefined => {
    known.add(name)
    return flags.get(name) ?? env[`SOAK_${name.replace(/-/g, '_').toUpperCase()}`]
  }
  const number = (name: string, fallback: number, check: (value: number) => boolean, expected: string): number => {
    const text = raw(name)
    if (text === undefined || text === '') return fallback
    const value = Number(text)
    if (!check(value)) throw new Error(`${name} must be ${expected}, not "${text}"`)
    return value
  }
  return {
    raw,
    number,
    count: (name: string, fallback: number, min = 1) => number(name, fallback, (v) => Number.isInteger(v) && v >= min, `an integer ≥ ${min}`),
    share: (name: string, fallback: number) => number(name, fallback, (v) => v >= 0 && v <= 1, 'between 0 and 1'),
    flag: (name: string) => ['1', 'true', 'yes'].includes(raw(name) ?? ''),
    stores(): StoreKind[] {
      const store = raw('store') ?? 'both'
      const stores: StoreKind[] = store === 'both' ? ['redis', 'postgres'] : [store as StoreKind]
      if (!stores.every((kind) => kind === 'redis' || kind === 'postgres')) throw new Error(`store must be redis, postgres or both, not "${store}"`)
      return stores
    },
    done(): void {
      for (const name of flags.keys()) if (!known.has(name)) throw new Error(`unknown flag --${name}; known: ${[...known].map((k) => `--${k}`).join(' ')}`)
    },
  }
}

export function loadConfig(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): SoakConfig {
  const { raw, count, share: rate, flag, stores: storesOf, done } = flagReader(argv, env)
  const stores = storesOf()
  const config: SoakConfig = {
    stores,
    payments: count('payments', DEFAULTS.payments),
    workers: count('workers', DEFAULTS.workers, 2),
    kills: count('kills', DEFAULTS.kills, 0),
    concurrency: count('concurrency', DEFAULTS.concurrency),
    duplicateRate: rate('duplicate-rate', DEFAULTS.duplicateRate),
    failRate: rate('fail-rate', flag('inbox') ? 0 : DEFAULTS.failRate),
    leaseMs: count('lease-ms', DEFAULTS.leaseMs),
    effectDelayMs: count('effect-delay-ms', DEFAULTS.effectDelayMs, 0),
    maxAttempts: count('max-attempts', DEFAULTS.maxAttempts),
    poolSize: count('pool-size', DEFAULTS.poolSize),
    seed: count('seed', randomInt(2 ** 31), 0),
    keep: flag('keep'),
    inbox: flag('inbox'),
    outageMs: count('outage-ms', Math.ceil(EMULATOR_RETRY_WINDOW_MS * 1.1), 0),
    backoffMaxMs: count('backoff-max-ms', 5000),
    processedWithinPeriods: count('processed-within-periods', 1),
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    restartStore: flag('restart-store'),
    redisPersistence: persistence(raw('redis-aof') ?? 'no'),
    downMs: count('down-ms', 1000, 0),
  }
  done()
  if (config.failRate >= 1) throw new Error('fail-rate must be below 1, or no delivery could ever succeed')
  return config
}

/**
 * Runs `soak` on each store the config names, one after the other; false when any run failed or could not run
 * (said on stderr, with the reason).
 */
export async function onEachStore<C extends { stores: StoreKind[] }>(config: C, what: string, soak: (store: StoreKind, config: C) => Promise<boolean>): Promise<boolean> {
  let ok = true
  for (const store of config.stores) {
    try {
      if (!(await soak(store, config))) ok = false
    } catch (error) {
      ok = false
      console.error(`\nthe ${store} ${what} could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    }
  }
  return ok
}
