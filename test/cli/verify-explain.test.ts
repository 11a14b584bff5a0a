import { describe, expect, it } from 'vitest'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { alteredBody, diagnosisCases, TOKEN } from '../core/diagnosis-cases.js'
import { runCli } from './run.js'

/** Neither the token as configured nor its clean form, nor a long piece of either, appears anywhere. */
function expectNoToken(output: string, configured: string): void {
  for (const secret of [configured, TOKEN, TOKEN.slice(0, 16), configured.trim()]) expect(output).not.toContain(secret)
}

describe('fpx-collect verify --explain', () => {
  it('names the zero-width space in the configured token, then the whitespace, exit 1, never printing the token', async () => {
    const body = signCallback(samplePaymentFields(), TOKEN).body
    const zeroWidth = `${TOKEN}\u200b`
    const withSpace = `${TOKEN}\u200b `
    const first = await runCli(['verify', '--explain'], { env: { FPX_CHECKSUM_TOKEN: zeroWidth }, input: body })
    expect(first.code).toBe(1)
    expect(first.stdout).toContain('valid: no')
    expect(first.stdout).toContain('diagnosis: the checksum verifies with the configured Checksum Token without its invisible characters (U+200B ZERO WIDTH SPACE at the end)')
    expect(first.stdout).toMatch(/^ {2}checksum_token +1 {2}MATCHED {2}the configured Checksum Token without/m)
    expectNoToken(first.stdout + first.stderr, zeroWidth)

    const second = await runCli(['verify', '--explain', '--checksum-token', withSpace], { input: body })
    expect(second.code).toBe(1)
    expect(second.stdout).toContain('U+200B ZERO WIDTH SPACE at the end')
    expect(second.stdout).toContain('whitespace (U+0020 SPACE at the end)')
    expectNoToken(second.stdout + second.stderr, withSpace)
  })

  it('prints the table of what was tried when nothing matches, and the diagnosis in --json', async () => {
    const env = { FPX_CHECKSUM_TOKEN: TOKEN }
    const text = await runCli(['verify', '--explain'], { env, input: alteredBody() })
    expect(text.code).toBe(1)
    expect(text.stdout).toContain('diagnosis: no single transformation makes the checksum verify')
    expect(text.stdout).toMatch(/^ {2}tried +candidates {2}result {2}what$/m)
    for (const kind of ['checksum_token', 'other_credential', 'query_and_body', 'plus_and_space', 'values_trimmed', 'null_text', 'amount_format', 'boolean_format', 'nested_key_order', 'rendering', 'field_added', 'field_dropped'])
      expect(text.stdout).toMatch(new RegExp(`^ {2}${kind} +\\d+ {2}(no|n/a) `, 'm'))
    expect(text.stdout).toMatch(/^ {2}field_added +34 {2}no +each field left out in turn$/m)
    expect(text.stdout).toMatch(/^ {2}\d+ HMACs computed$/m)
    expect(text.stdout).not.toContain('hint:')

    const json = await runCli(['verify', '--explain', '--json'], { env, input: alteredBody() })
    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as { diagnosis: { verdict: string; tried: { kind: string; matched: boolean }[]; hmacs: number } }
    expect(report.diagnosis.verdict).toBe('unexplained')
    expect(report.diagnosis.tried).toHaveLength(12)
    expect(report.diagnosis.hmacs).toBeGreaterThan(60)
    expectNoToken(text.stdout + text.stderr + json.stdout + json.stderr, TOKEN)
  })

  it('says there is nothing to diagnose for a valid body', async () => {
    const body = signCallback(samplePaymentFields(), TOKEN).body
    const result = await runCli(['verify', '--explain'], { env: { FPX_CHECKSUM_TOKEN: TOKEN }, input: body })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('explain: the checksum matches the message as received; nothing to diagnose')
  })

  // Every transformation the public API names, through the CLI as a merchant runs it on a captured body.
  it.each(diagnosisCases().map((item) => [item.name, item] as const))('names it: %s', async (_name, item) => {
    const result = await runCli(['verify', '--explain', '--json', '--content-type', item.contentType], { env: { FPX_CHECKSUM_TOKEN: item.token }, input: item.body })
    expect(result.code).toBe(1)
    const report = JSON.parse(result.stdout) as { code: string; diagnosis: { verdict: string; summary: string; match: { kind: string; field?: string } } }
    expect(report.code).toBe('checksum_mismatch')
    expect(report.diagnosis.verdict).toBe('matched')
    expect(report.diagnosis.match.kind).toBe(item.kind)
    for (const words of item.says) expect(report.diagnosis.summary).toContain(words)
    if (item.field !== undefined) expect(report.diagnosis.match.field).toBe(item.field)
    expectNoToken(result.stdout + result.stderr, item.token)
  })
})
