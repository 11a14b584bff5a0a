/**
 * Flags of the subcommands, split by node:util parseArgs: `--name value`, `--name=value`, boolean `--flag`,
 * repeatable flags, `-h`, and `--` ending the flags. parseArgs runs non-strict and hands back its tokens so
 * the checks below keep our messages ("unknown option --x", "--x needs a value") and take a value that starts
 * with a dash (`--field -1`), which strict mode refuses as ambiguous. Each command's help text is its own.
 */
import { parseArgs as splitArgs } from 'node:util'

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
  const flags = new Map<string, FlagSpec>([['help', { type: 'boolean' }], ...Object.entries(spec)])
  const { tokens } = splitArgs({
    args: [...argv],
    options: { ...Object.fromEntries(flags), help: { type: 'boolean', short: 'h' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  })
  const positionals: string[] = []
  const values = new Map<string, string[]>()
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value)
    if (token.kind !== 'option') continue
    const flag = flags.get(token.name)
    if (flag === undefined) throw new UsageError(`unknown option ${token.rawName}`)
    const name = `--${token.name}`
    if (flag.type === 'boolean' && token.value !== undefined) throw new UsageError(`${name} takes no value`)
    if (flag.type === 'string' && token.value === undefined) throw new UsageError(`${name} needs a value`)
    const seen = values.get(token.name)
    if (seen !== undefined && flag.type === 'string' && flag.multiple !== true) throw new UsageError(`${name} given more than once`)
    values.set(token.name, [...(seen ?? []), token.value ?? 'true'])
  }
  return new ParsedArgs(positionals, values)
}
