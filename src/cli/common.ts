import { readFileSync } from 'node:fs'
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

export function readJsonFile(path: string): unknown {
  try {
    return JSON.parse(readText(path)) as unknown
  } catch (error) {
    if (error instanceof UsageError) throw error
    throw new UsageError(`${path} is not valid JSON: ${(error as Error).message}`)
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

/** A time in a listing: ISO 8601, or '-' for none. */
export const listedTime = (date: Date | null) => (date === null ? '-' : date.toISOString())

/** --limit of a listing: at most 10,000 lines, 100 when not given. */
export function listLimit(text: string | undefined): number {
  if (text === undefined) return 100
  const value = Number(text)
  if (!(Number.isInteger(value) && value > 0 && value <= 10_000)) throw new UsageError('--limit must be an integer from 1 to 10000')
  return value
}

/** Prints a listing's value as JSON with --json, else its lines. */
export function listingPrinter(io: Io, json: boolean): (value: unknown, lines: string[]) => void {
  return (value, lines) => io.out(json ? `${JSON.stringify(value, null, 2)}\n` : lines.length > 0 ? `${lines.join('\n')}\n` : '')
}
