import { describe, expect, it } from 'vitest'
import { type FlagSpec, parseArgs, UsageError } from '../../src/cli/args.js'

const SPEC: Record<string, FlagSpec> = {
  port: { type: 'string' },
  field: { type: 'string', multiple: true },
  json: { type: 'boolean' },
}

function usageError(argv: string[]): string {
  try {
    parseArgs(argv, SPEC)
  } catch (error) {
    if (error instanceof UsageError) return error.message
    throw error
  }
  throw new Error(`no usage error for ${argv.join(' ')}`)
}

describe('parseArgs (node:util parseArgs with our checks and messages)', () => {
  it('reads --name value, --name=value, booleans, repeated flags and positionals in any order', () => {
    const args = parseArgs(['a.txt', '--port', '4010', '--field=x=1', '--json', '--field', 'y=2', 'b.txt'], SPEC)
    expect(args.string('port')).toBe('4010')
    expect(args.strings('field')).toEqual(['x=1', 'y=2'])
    expect(args.boolean('json')).toBe(true)
    expect(args.boolean('help')).toBe(false)
    expect(args.positionals).toEqual(['a.txt', 'b.txt'])
    expect(args.string('missing')).toBeUndefined()
    expect(args.strings('missing')).toEqual([])
  })

  it('takes a value that starts with a dash, an empty value, and - as a positional', () => {
    const args = parseArgs(['--port', '-1', '--field=', '-'], SPEC)
    expect(args.string('port')).toBe('-1')
    expect(args.strings('field')).toEqual([''])
    expect(args.positionals).toEqual(['-'])
  })

  it('treats everything after -- as positionals, and -h or --help as a request for help', () => {
    const args = parseArgs(['--json', '--', '--port', '-h'], SPEC)
    expect(args.positionals).toEqual(['--port', '-h'])
    expect(args.boolean('help')).toBe(false)
    expect(parseArgs(['-h'], SPEC).boolean('help')).toBe(true)
    expect(parseArgs(['x', '--help'], SPEC).boolean('help')).toBe(true)
  })

  it('refuses unknown options, a missing or unexpected value and a repeated single flag, with our messages', () => {
    expect(usageError(['--tokn', 'x'])).toBe('unknown option --tokn')
    expect(usageError(['--tokn=x'])).toBe('unknown option --tokn')
    expect(usageError(['-x'])).toBe('unknown option -x')
    expect(usageError(['--__proto__'])).toBe('unknown option --__proto__')
    expect(usageError(['--port'])).toBe('--port needs a value')
    expect(usageError(['--json=yes'])).toBe('--json takes no value')
    expect(usageError(['--help=1'])).toBe('--help takes no value')
    expect(usageError(['--port', '1', '--port=2'])).toBe('--port given more than once')
  })
})
