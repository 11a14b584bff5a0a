import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { requestChecksum } from '../../src/core/request/request-checksum.js'
import { messageChecksum } from '../../src/core/result/checksum.js'
import { verifyDelivery } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { runCli, TOKEN } from './run.js'

const dir = mkdtempSync(join(tmpdir(), 'fpx-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const env = { FPX_CHECKSUM_TOKEN: TOKEN }

describe('fpx-collect (no command, --help)', () => {
  it('prints usage for the command and each subcommand', async () => {
    const top = await runCli(['--help'])
    expect(top.code).toBe(0)
    expect(top.stdout).toContain('Usage: fpx-collect <command>')
    const commands = ['emulator', 'sign', 'verify', 'trigger']
    const results = await Promise.all(commands.map((command) => runCli([command, '--help'])))
    results.forEach((result, index) => {
      expect(result.code, commands[index]).toBe(0)
      expect(result.stdout).toContain(`Usage: fpx-collect ${commands[index]}`)
    })
  })

  it('lists --strict in the emulator help, and refuses a value for it', async () => {
    const help = await runCli(['emulator', '-h'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}--strict {2,}\S/m)
    const valued = await runCli(['emulator', '--strict=yes'])
    expect(valued.code).toBe(2)
    expect(valued.stderr).toContain('--strict takes no value')
    expect(valued.stderr).toContain('fpx-collect emulator --help')
  })

  it('exits 2 with a pointer to --help for an unknown command or flag', async () => {
    const command = await runCli(['refund'])
    expect(command.code).toBe(2)
    expect(command.stderr).toContain('unknown command "refund"')
    const flag = await runCli(['sign', '--tokn', 'x'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('unknown option --tokn')
    expect(flag.stderr).toContain('fpx-collect sign --help')
  })
})

describe('fpx-collect sign', () => {
  const fields = { order_number: 'ORD-1', payment_status: 'true', uid: 'u-1' }
  const pairs = Object.entries(fields).flatMap(([name, value]) => ['--field', `${name}=${value}`])

  it('prints the message checksum of --field pairs, with the token from the environment', async () => {
    const result = await runCli(['sign', ...pairs], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`${messageChecksum(fields, TOKEN)}\n`)
  })

  it('reads a JSON file with nested params, and bracketed --field names nest the same way', async () => {
    const file = join(dir, 'fields.json')
    writeFileSync(file, JSON.stringify({ ...fields, params: { reference1: 'A' } }))
    const fromFile = await runCli(['sign', '--fields', file, '--checksum-token', TOKEN])
    const fromPairs = await runCli(['sign', ...pairs, '--field', 'params[reference1]=A'], { env })
    expect(fromFile.stdout).toBe(`${messageChecksum({ ...fields, params: { reference1: 'A' } }, TOKEN)}\n`)
    expect(fromPairs.stdout).toBe(fromFile.stdout)
  })

  it('prints a signed form body that the receiver verifies', async () => {
    const sample = samplePaymentFields()
    const pairsOfSample = Object.entries(sample).flatMap(([name, value]) => ['--field', `${name}=${String(value)}`])
    const result = await runCli(['sign', ...pairsOfSample, '--output', 'form'], { env })
    expect(result.code).toBe(0)
    const verified = await verifyDelivery({ body: result.stdout.trimEnd(), contentType: 'application/x-www-form-urlencoded' }, { checksumToken: TOKEN })
    expect(verified.exchangeNumber).toBe(sample.exchange_number)
  })

  it('--request signs the nine payment request fields in their fixed order', async () => {
    const request = {
      buyer_email: 'a@example.com', buyer_name: 'A', buyer_phone: '+60123456789', order_number: 'ORD-2',
      product_description: 'Tea', transaction_amount: '1.00', uid: 'u-1',
    }
    const args = Object.entries(request).flatMap(([name, value]) => ['--field', `${name}=${value}`])
    const result = await runCli(['sign', '--request', ...args], { env })
    expect(result.stdout).toBe(`${requestChecksum(request, TOKEN)}\n`)
  })

  it('--request names every missing and every invalid field in one run', async () => {
    const file = join(dir, 'request.json')
    writeFileSync(file, JSON.stringify({ order_number: 'ORD-3', transaction_amount: 100.2, buyer_email: 'not-an-address', callback_url: 'ftp://shop.test/cb' }))
    const result = await runCli(['sign', '--request', '--fields', file, '--field', 'buyer_name=Line one\nline two'], { env })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('  ')).map((line) => line.trim())
    expect(lines).toEqual([
      'buyer_email: must be an e-mail address',
      'buyer_name: must be one line of text without control characters',
      'buyer_phone: is required',
      'callback_url: must be an absolute http or https URL',
      'product_description: is required',
      'transaction_amount: must be text',
      'uid: is required',
    ])
    expect(result.stderr).toContain("the payment request's signed fields need fixing (7)")
    expect(result.stderr).toContain('fpx-collect sign --help')
  })

  it('--request signs what the emulator takes: an empty buyer_phone, an amount without decimals, no URLs', async () => {
    const request = { buyer_email: 'a@example.com', buyer_name: 'A', buyer_phone: '', order_number: 'ORD-4', product_description: 'Tea', transaction_amount: '200', uid: 'u-1' }
    const args = Object.entries(request).flatMap(([name, value]) => ['--field', `${name}=${value}`])
    const result = await runCli(['sign', '--request', ...args], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toBe(`${requestChecksum(request, TOKEN)}\n`)
  })

  it('exits 2 without a Checksum Token, and never prints the token', async () => {
    const none = await runCli(['sign', ...pairs])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('FPX_CHECKSUM_TOKEN')
    const given = await runCli(['sign', ...pairs, '--output', 'form', '--checksum-token', TOKEN])
    expect(given.stdout + given.stderr).not.toContain(TOKEN)
  })
})

describe('fpx-collect verify', () => {
  it('says valid, the state, the rendering and the fields of a captured body from a file', async () => {
    const sample = samplePaymentFields()
    const file = join(dir, 'body.txt')
    writeFileSync(file, `${signCallback(sample, TOKEN).body}\n`)
    const result = await runCli(['verify', file], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('valid: yes')
    expect(result.stdout).toContain('state: succeeded')
    expect(result.stdout).toContain('rendering: plain')
    expect(result.stdout).toContain(`exchange_number: ${String(sample.exchange_number)}`)
    expect(result.stdout).toContain('fpx_debit_auth_code')
    expect(result.stdout + result.stderr).not.toContain(TOKEN)
  })

  it('reads standard input and names the nested rendering that matched, as JSON with --json', async () => {
    const body = signCallback(samplePaymentFields({ payment_status: 'false', fpx_debit_auth_code: '51', params: { reference1: '12' } }), TOKEN, { rendering: 'ruby34' }).body
    const result = await runCli(['verify', '--json'], { env, input: body })
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout) as Record<string, unknown>
    expect(report).toMatchObject({ valid: true, state: 'failed', rendering: 'ruby34' })
    expect(report.fields).toContain('params')
  })

  it('says not valid and why, exit 1, for an altered body or the wrong token', async () => {
    const body = signCallback(samplePaymentFields(), TOKEN).body.replace('transaction_amount=100.20', 'transaction_amount=1.00')
    const altered = await runCli(['verify', '-'], { env, input: body })
    expect(altered.code).toBe(1)
    expect(altered.stdout).toContain('valid: no')
    expect(altered.stdout).toContain('reason: checksum_mismatch')
    expect(altered.stdout).toMatch(/fields \(\d+\): source, payment_status/)

    const unsigned = await runCli(['verify', '--json'], { env, input: 'order_number=1' })
    expect(unsigned.code).toBe(1)
    expect(JSON.parse(unsigned.stdout)).toMatchObject({ valid: false, code: 'checksum_missing', fields: ['order_number'] })
  })

  it('exits 2 for a file that cannot be read', async () => {
    const result = await runCli(['verify', join(dir, 'missing.txt')], { env })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('ENOENT')
  })
})
