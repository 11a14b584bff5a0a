import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { paymentForm } from '../emulator/harness.js'
import { startEmulatorCli } from './run.js'

/** `fpx-collect emulator --strict` as users run it: a separate process, its API over real HTTP. */
const directory = mkdtempSync(join(tmpdir(), 'fpx-strict-'))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

async function createPayment(baseUrl: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${baseUrl}/v1/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
}

describe('fpx-collect emulator --strict', () => {
  it('without the flag takes an amount of 200 (warning on standard error); with it refuses it with 422', async () => {
    const lenient = await startEmulatorCli([])
    try {
      const response = await createPayment(lenient.baseUrl, paymentForm({ transaction_amount: '200', buyer_phone: '0123456789' }))
      expect(response.status).toBe(200)
      await response.text()
    } finally {
      const { output } = await lenient.stop()
      expect(output).toContain('warning: transaction_amount "200" was normalised to "200.00"')
      expect(output).toContain('warning: buyer_phone "0123456789" is not in international format')
    }
    const strict = await startEmulatorCli(['--strict'])
    try {
      const response = await createPayment(strict.baseUrl, paymentForm({ transaction_amount: '200' }))
      expect(response.status).toBe(422)
      expect(await response.json()).toMatchObject({ code: 'invalid_parameters', fields: { transaction_amount: expect.any(String) } })
    } finally {
      const { output } = await strict.stop()
      expect(output).not.toContain('warning:')
    }
  })

  it('reads strict from the --config file too', async () => {
    const file = join(directory, 'strict.json')
    writeFileSync(file, JSON.stringify({ strict: true }))
    const emulator = await startEmulatorCli(['--config', file])
    try {
      const response = await createPayment(emulator.baseUrl, paymentForm({ buyer_phone: '' }))
      expect(response.status).toBe(422)
      expect(await response.json()).toMatchObject({ fields: { buyer_phone: 'is required' } })
    } finally {
      await emulator.stop()
    }
  })
})
