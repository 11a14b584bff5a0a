/*
 * `fpx-collect emulator --help` points to docs/emulator.md's reference section, and the two agree: every flag of
 * the help has its row there (and no other), every key of the configuration file's schema is documented, and the
 * section's example configuration is one the emulator takes.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { EMULATOR_HELP } from '../../src/cli/emulator.js'
import { emulatorConfigSchema, resolveConfig } from '../../src/emulator/index.js'
import { runCli } from './run.js'

const DOC = readFileSync(new URL('../../docs/emulator.md', import.meta.url), 'utf8')
const REFERENCE_HEADING = '## Reference: `fpx-collect emulator`'
const CONFIG_HEADING = '### The configuration file'

/** The text from `heading` to the next heading of the same or a higher level. */
function section(heading: string): string {
  const start = DOC.indexOf(`${heading}\n`)
  expect(start, heading).toBeGreaterThanOrEqual(0)
  const level = heading.indexOf(' ')
  const rest = DOC.slice(start + heading.length)
  const end = rest.search(new RegExp(`\\n#{1,${level}} `))
  return end < 0 ? rest : rest.slice(0, end)
}

/** Every key path of the schema: `mode`, `merchants[].credentials[].uid`, `banks.b2c[].code`, `delivery.attempts`. */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  if (schema instanceof z.ZodOptional) return keyPaths(schema.unwrap() as z.ZodType, prefix)
  if (schema instanceof z.ZodArray) return keyPaths(schema.element as z.ZodType, `${prefix}[]`)
  if (!(schema instanceof z.ZodObject)) return []
  return Object.entries(schema.shape as Record<string, z.ZodType>).flatMap(([key, value]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`
    return [path, ...keyPaths(value, path)]
  })
}

describe('the emulator reference', () => {
  it('the help names docs/emulator.md and its reference section, not a README section', async () => {
    const help = await runCli(['emulator', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toBe(EMULATOR_HELP)
    expect(help.stdout).toContain('Reference: docs/emulator.md, "Reference: fpx-collect emulator"')
    expect(help.stdout).toContain('docs/emulator.md, "The')
    expect(help.stdout).not.toContain('README')
    expect(DOC.startsWith('# The emulator\n')).toBe(true)
    // The reference comes first: before any other section of the page.
    expect(DOC.indexOf('\n## ')).toBe(DOC.indexOf(`\n${REFERENCE_HEADING}`))
  })

  it('has a row for every flag of the help, and none the help lacks', () => {
    const helpFlags = [...EMULATOR_HELP.matchAll(/^ {2}(--[a-z-]+)/gm)].map((found) => found[1])
    const rows = [...section(REFERENCE_HEADING).matchAll(/^\| `(--[a-z-]+)/gm)].map((found) => found[1])
    expect(helpFlags).toEqual(expect.arrayContaining(['--config', '--state', '--show-credentials', '--strict']))
    expect(rows.sort()).toEqual([...helpFlags].sort())
  })

  it('documents every key of the configuration file', () => {
    const text = section(CONFIG_HEADING)
    const spans = [...text.matchAll(/`([^`]+)`/g)].map((found) => (found[1] as string).replace(/^…/, ''))
    const undocumented = keyPaths(emulatorConfigSchema).filter((path) => {
      const last = path.slice(path.lastIndexOf('.') + 1).replace(/\[\]$/, '')
      const asRow = spans.some((span) => path === span || (span.startsWith('.') && path.endsWith(span)))
      // The keys of a bank entry are listed in their list's row: `{ "code", "name", "status"?: … }`.
      return !asRow && !text.includes(`"${last}"`)
    })
    expect(keyPaths(emulatorConfigSchema)).toEqual(expect.arrayContaining(['merchants[].credentials[].checksumToken', 'delivery.redirectCountsAsDelivered']))
    expect(undocumented).toEqual([])
  })

  it("gives an example configuration the emulator takes, with no key it would ignore", () => {
    const example = /```json\n([\s\S]*?)\n```/.exec(section(CONFIG_HEADING))?.[1]
    expect(example).toBeDefined()
    const config = JSON.parse(example as string) as Record<string, unknown>
    const setup = resolveConfig(config)
    expect(setup.merchants.map((merchant) => [merchant.id, merchant.credentials.length])).toEqual([['kedai-kopi', 2]])
    expect(setup.partners).toEqual([])
    expect(emulatorConfigSchema.strict().safeParse(config).success).toBe(true)
  })
})
