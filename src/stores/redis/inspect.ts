/*
 * What a Redis server would forget of the handled states: the Redis store asks once, when it starts working,
 * and warns loudly (as BullMQ does about eviction) when a restart or an eviction would make handlers run again.
 */
import { type Logger, logSafely } from '../../core/logger.js'
import type { RawCommand } from './client.js'

export interface RedisDurability {
  /** Where the settings were read: CONFIG GET, INFO (CONFIG disabled, as on many managed services), or nowhere. */
  readonly source: 'config' | 'info' | 'none'
  readonly appendonly: boolean | undefined
  readonly appendfsync: 'always' | 'everysec' | 'no' | undefined
  readonly maxmemoryPolicy: string | undefined
  /** RDB snapshot rules (`save`), '' when none. */
  readonly save: string | undefined
  /**
   * What a Redis restart can forget of the completions it acknowledged: `nothing` (AOF, appendfsync always),
   * `last-second` (AOF everysec, on a crash), `os-buffer` (AOF appendfsync no), `since-snapshot` (RDB only),
   * `everything` (no persistence), `unknown`.
   */
  readonly restartForgets: 'nothing' | 'last-second' | 'os-buffer' | 'since-snapshot' | 'everything' | 'unknown'
  /** Whether Redis may evict the store's keys under memory pressure (any policy but noeviction). */
  readonly evicts: boolean | undefined
  /** The warnings logged, if any. */
  readonly warnings: readonly string[]
}

function pairs(reply: unknown): Map<string, string> {
  const found = new Map<string, string>()
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) found.set(String(reply[i]), String(reply[i + 1]))
  } else if (reply instanceof Map) {
    for (const [key, value] of reply) found.set(String(key), String(value))
  } else if (reply !== null && typeof reply === 'object') {
    for (const [key, value] of Object.entries(reply)) found.set(key, String(value))
  }
  return found
}

function infoFields(reply: unknown): Map<string, string> {
  const found = new Map<string, string>()
  for (const line of String(reply ?? '').split(/\r?\n/)) {
    const at = line.indexOf(':')
    if (at > 0 && !line.startsWith('#')) found.set(line.slice(0, at), line.slice(at + 1).trim())
  }
  return found
}

async function readSettings(send: RawCommand): Promise<Pick<RedisDurability, 'source' | 'appendonly' | 'appendfsync' | 'maxmemoryPolicy' | 'save'>> {
  try {
    const config = new Map<string, string>()
    // One parameter per call: Redis before 7 takes only one pattern.
    for (const name of ['appendonly', 'appendfsync', 'maxmemory-policy', 'save']) for (const [k, v] of pairs(await send(['CONFIG', 'GET', name]))) config.set(k, v)
    if (config.has('appendonly') || config.has('maxmemory-policy'))
      return {
        source: 'config',
        appendonly: config.has('appendonly') ? config.get('appendonly') === 'yes' : undefined,
        appendfsync: config.get('appendfsync') as RedisDurability['appendfsync'],
        maxmemoryPolicy: config.get('maxmemory-policy'),
        save: config.get('save'),
      }
  } catch {
    // CONFIG is disabled or renamed (managed services): INFO says less, but says whether AOF is on.
  }
  try {
    const info = infoFields(await send(['INFO', 'persistence']))
    const memory = infoFields(await send(['INFO', 'memory']))
    return {
      source: 'info',
      appendonly: info.has('aof_enabled') ? info.get('aof_enabled') === '1' : undefined,
      appendfsync: undefined,
      maxmemoryPolicy: memory.get('maxmemory_policy'),
      save: undefined,
    }
  } catch {
    return { source: 'none', appendonly: undefined, appendfsync: undefined, maxmemoryPolicy: undefined, save: undefined }
  }
}

const ADVICE = 'Set appendonly yes and appendfsync always (and maxmemory-policy noeviction) for no second runs across Redis restarts.'

/** Reads the server's settings and says what they mean for handled states; never throws. */
export async function inspectRedis(send: RawCommand): Promise<RedisDurability> {
  const settings = await readSettings(send)
  const warnings: string[] = []
  let restartForgets: RedisDurability['restartForgets'] = 'unknown'
  if (settings.appendonly === true) {
    restartForgets = settings.appendfsync === 'always' ? 'nothing' : settings.appendfsync === 'no' ? 'os-buffer' : settings.appendfsync === 'everysec' ? 'last-second' : 'unknown'
    if (settings.appendfsync === 'everysec')
      warnings.push(
        'Redis appendfsync is everysec: a machine crash (power loss, kernel panic) loses up to the last second of recorded ' +
          'payment states, and their handlers run again when the results are redelivered. Use appendfsync always to close that window.',
      )
    else if (settings.appendfsync === 'no')
      warnings.push(
        'IMPORTANT! Redis appendfsync is no: a crash loses whatever the operating system had not written yet (often ' +
          `30 s) of recorded payment states, and their handlers run again on redelivery. ${ADVICE}`,
      )
    else if (settings.appendfsync === undefined)
      warnings.push('Redis keeps an append-only file, but its appendfsync could not be read (CONFIG is disabled): a crash may lose the last recorded payment states.')
  } else if (settings.appendonly === false) {
    restartForgets = settings.save === undefined ? 'unknown' : settings.save.trim() === '' ? 'everything' : 'since-snapshot'
    const what =
      restartForgets === 'everything'
        ? 'keeps nothing on disk (appendonly no, no RDB snapshots): a Redis restart forgets every handled payment state'
        : 'keeps no append-only file (appendonly no): a Redis restart forgets every payment state handled since the last RDB snapshot'
    warnings.push(
      `IMPORTANT! Redis ${what}, so redelivered results run their handlers again and a late pending (99) result after ` +
        `its success is dispatched. ${ADVICE}`,
    )
  } else {
    warnings.push('Could not tell whether Redis persists the handled payment states (CONFIG and INFO refused): make sure it keeps an append-only file.')
  }
  const evicts = settings.maxmemoryPolicy === undefined ? undefined : settings.maxmemoryPolicy !== 'noeviction'
  if (evicts === true)
    warnings.push(
      `IMPORTANT! Redis maxmemory-policy is ${settings.maxmemoryPolicy}. It should be "noeviction": under memory pressure ` +
        'Redis may evict the keys that record handled payment states, and their handlers run again on redelivery.',
    )
  return { ...settings, restartForgets, evicts, warnings }
}

// Each warning once per logger: an app making a store per request (or a test suite) is told, not flooded.
const warned = new WeakMap<object, Set<string>>()

/** Logs what `inspectRedis` found: each problem as a warning (once per logger and message), never throwing. */
export function reportDurability(durability: RedisDurability, logger: Pick<Logger, 'warn' | 'debug'>): void {
  const seen = warned.get(logger) ?? new Set<string>()
  warned.set(logger, seen)
  const details = {
    appendonly: durability.appendonly,
    appendfsync: durability.appendfsync,
    maxmemoryPolicy: durability.maxmemoryPolicy,
    restartForgets: durability.restartForgets,
  }
  if (durability.warnings.length === 0) logSafely(() => logger.debug(details, 'Redis persists every recorded payment state (AOF, appendfsync always, noeviction)'))
  for (const warning of durability.warnings) {
    if (seen.has(warning)) continue
    seen.add(warning)
    logSafely(() => logger.warn(details, `fpx-collect: ${warning}`))
  }
}

/** Where the store's warnings go when no logger was given: the console, as BullMQ's do. */
export const consoleWarnings: Pick<Logger, 'warn' | 'debug'> = {
  warn: (_details, message) => console.warn(message),
  debug: () => {},
}
