import { readFileSync } from 'node:fs'
import { jsonErrorPlace } from '../core/json-error.js'
import { localTime, MALAYSIA_OFFSET_MINUTES, parseOffset } from '../core/time.js'
import type { FieldInput } from '../core/values.js'
import { type FlagSpec, type ParsedArgs, UsageError } from './args.js'

/** Exit codes, the same for every subcommand (listed in `fpx-collect --help`). */
export const EXIT = {
  ok: 0,
  /** The command ran and the answer is no: verify found the message invalid, trigger got a non-2xx answer. */
  negative: 1,
  /** Wrong flags, unreadable or invalid input files, no Checksum Token. */
  usage: 2,
  /** Could not do the work: network error, port in use. */
  failure: 3,
} as const

export interface Io {
  out(text: string): void
  err(text: string): void
  readStdin(): Promise<string>
}

export const TOKEN_FLAG: Record<string, FlagSpec> = { 'checksum-token': { type: 'string' } }
export const FIELD_FLAGS: Record<string, FlagSpec> = { field: { type: 'string', multiple: true }, fields: { type: 'string' } }
export const TOKEN_ENV = 'FPX_CHECKSUM_TOKEN'

/**
 * The Checksum Token from --checksum-token or FPX_CHECKSUM_TOKEN. Messages name the source, never the value.
 * The environment variable is preferred in shared shells: a flag is visible to other users in `ps`.
 */
export function checksumToken(args: ParsedArgs, env: NodeJS.ProcessEnv): string {
  const token = args.string('checksum-token') ?? env[TOKEN_ENV]
  if (token === undefined || token === '') throw new UsageError(`no Checksum Token: set ${TOKEN_ENV} or pass --checksum-token`)
  return token
}

export function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
}

/** A JSON file; when it is not valid JSON the error names the line and column, never JSON.parse's own message (which quotes the file). */
export function readJsonFile(path: string): unknown {
  const text = readText(path)
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    const place = jsonErrorPlace(text, error)
    throw new UsageError(`${path} is not valid JSON${place === undefined ? '' : ` (${place})`}`)
  }
}

/**
 * Fields from --fields file.json (an object; nested objects for params) and then --field name=value pairs,
 * which win. A bracketed name such as params[reference1] goes into the nested object, as a form would send it.
 */
export function readFields(args: ParsedArgs): Record<string, FieldInput> {
  const fields: Record<string, FieldInput> = Object.create(null)
  const file = args.string('fields')
  if (file !== undefined) {
    const value = readJsonFile(file)
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`${file} must hold a JSON object of fields`)
    Object.assign(fields, value)
  }
  for (const pair of args.strings('field')) {
    const equals = pair.indexOf('=')
    if (equals <= 0) throw new UsageError(`--field takes name=value, got "${pair}"`)
    const name = pair.slice(0, equals)
    const value = pair.slice(equals + 1)
    const [, outer, inner] = /^([^[\]]+)\[([^[\]]+)\]$/.exec(name) ?? []
    if (outer === undefined || inner === undefined) {
      fields[name] = value
      continue
    }
    const existing = fields[outer]
    const nested: Record<string, FieldInput> =
      typeof existing === 'object' && existing !== null && !Array.isArray(existing) && !(existing instanceof Map) ? { ...(existing as Record<string, FieldInput>) } : {}
    nested[inner] = value
    fields[outer] = nested
  }
  return fields
}

export function helpRequested(args: ParsedArgs, io: Io, help: string): boolean {
  if (args.boolean('help')) io.out(help)
  return args.boolean('help')
}

/** A time in a listing, as an operator reads it: Malaysia time unless `--utc-offset` says otherwise, '-' for none. */
export const listedTime = (date: Date | null, offsetMinutes = MALAYSIA_OFFSET_MINUTES) => localTime(date, offsetMinutes)

export const UTC_OFFSET_FLAG: Record<string, FlagSpec> = { 'utc-offset': { type: 'string' } }

/** --utc-offset in minutes (+08:00, Malaysia time, when not given). */
export function utcOffset(args: ParsedArgs): number {
  const text = args.string('utc-offset')
  if (text === undefined) return MALAYSIA_OFFSET_MINUTES
  try {
    return parseOffset(text)
  } catch (error) {
    throw new UsageError(`--utc-offset: ${(error as Error).message}`)
  }
}

const AGO_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A time given to a flag (`--from`, `--to`): a date or a date and time read at `offsetMinutes` from UTC
 * (`2026-11-27`, `2026-11-27 14:00`, `2026-11-27T14:00:05`), one with its own offset (`…Z`, `…+08:00`), or an age
 * (`30m`, `24h`, `7d`: that long before `now`).
 */
export function flagTime(flag: string, text: string, offsetMinutes: number, now: number): Date {
  const ago = /^(\d+)([mhd])$/.exec(text)
  if (ago !== null) return new Date(now - Number(ago[1]) * (AGO_UNITS[ago[2] as string] as number))
  const local = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text)
  const zoned = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? new Date(text) : undefined
  const date =
    local !== null
      ? new Date(Date.UTC(Number(local[1]), Number(local[2]) - 1, Number(local[3]), Number(local[4] ?? 0), Number(local[5] ?? 0), Number(local[6] ?? 0)) - offsetMinutes * 60_000)
      : zoned
  if (date === undefined || !Number.isFinite(date.getTime()) || (local !== null && localTime(date, offsetMinutes).slice(0, 10) !== text.slice(0, 10)))
    throw new UsageError(`${flag} takes a date (2026-11-27), a date and time (2026-11-27 14:00, or with Z or +08:00) or an age (30m, 24h, 7d), not "${text}"`)
  return date
}

/** --limit of a listing: at most 10,000 lines, 100 when not given. */
export function listLimit(text: string | undefined): number {
  if (text === undefined) return 100
  const value = Number(text)
  if (!(Number.isInteger(value) && value > 0 && value <= 10_000)) throw new UsageError('--limit must be an integer from 1 to 10000')
  return value
}

/**
 * A text that may be a buyer's or the merchant's (a name, an e-mail, an order number, a message), on one line and
 * with no terminal control characters: an ESC or C1 control in a buyer's e-mail would otherwise reach the operator's
 * terminal as a command (clear the screen, retitle the window).
 */
export const oneLine = (text: string): string => text.replace(/\p{Cc}/gu, '?')

/** Prints a listing's value as JSON with --json (which escapes control characters itself), else its lines, each on one line. */
export function listingPrinter(io: Io, json: boolean): (value: unknown, lines: string[]) => void {
  return (value, lines) => io.out(json ? `${JSON.stringify(value, null, 2)}\n` : lines.length > 0 ? `${lines.map(oneLine).join('\n')}\n` : '')
}
