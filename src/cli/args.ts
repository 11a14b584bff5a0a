/**
 * A small argument parser: `--name value`, `--name=value`, boolean `--flag`, repeatable flags, `-h`, and `--`
 * ending the flags. Hand-written so the command has no dependency; node:util parseArgs lacks per-command help.
 */
export type FlagSpec = { readonly type: 'string' | 'boolean'; readonly multiple?: boolean }

/** A mistake in how the command was called: exit code 2 and a pointer to --help. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

export class ParsedArgs {
  constructor(
    readonly positionals: readonly string[],
    private readonly values: ReadonlyMap<string, readonly string[]>,
  ) {}

  string(name: string): string | undefined {
    return this.values.get(name)?.at(-1)
  }

  strings(name: string): readonly string[] {
    return this.values.get(name) ?? []
  }

  boolean(name: string): boolean {
    return this.values.has(name)
  }
}

export function parseArgs(argv: readonly string[], spec: Readonly<Record<string, FlagSpec>>): ParsedArgs {
  const flags: Record<string, FlagSpec> = { help: { type: 'boolean' }, ...spec }
  const positionals: string[] = []
  const values = new Map<string, string[]>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1))
      break
    }
    if (arg === '-h') {
      values.set('help', ['true'])
      continue
    }
    // A lone '-' is the usual name for standard input, not a flag.
    if (!arg.startsWith('--')) {
      if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option ${arg}`)
      positionals.push(arg)
      continue
    }
    const equals = arg.indexOf('=')
    const name = equals < 0 ? arg.slice(2) : arg.slice(2, equals)
    const flag = flags[name]
    if (flag === undefined) throw new UsageError(`unknown option --${name}`)
    let value: string
    if (flag.type === 'boolean') {
      if (equals >= 0) throw new UsageError(`--${name} takes no value`)
      value = 'true'
    } else if (equals >= 0) {
      value = arg.slice(equals + 1)
    } else {
      const next = argv[i + 1]
      if (next === undefined) throw new UsageError(`--${name} needs a value`)
      value = next
      i++
    }
    const seen = values.get(name)
    if (seen !== undefined && flag.type === 'string' && flag.multiple !== true) throw new UsageError(`--${name} given more than once`)
    values.set(name, [...(seen ?? []), value])
  }
  return new ParsedArgs(positionals, values)
}
