import { expect, it } from 'vitest'
import { runScript, withoutPackage } from '../without-package.js'

const WITHOUT_OPENTELEMETRY = withoutPackage('@opentelemetry/api')

const SCRIPT = `
  const { createReceiver } = await import('./src/index.ts')
  const { samplePaymentFields, signCallback } = await import('./src/testing.ts')
  const token = 'ab'.repeat(32)
  const debug = []
  const logger = { debug: (_d, m) => debug.push(m), info() {}, warn: (_d, m) => { if (!m.startsWith('signature-only receiver')) console.log('warn: ' + m) }, error: (_d, m) => console.log('error: ' + m) }
  let apiMissing = false
  try { await import('@opentelemetry/api') } catch { apiMissing = true }
  const receiver = createReceiver({ signatureOnly: true, checksumToken: token, logger })
  let ran = 0
  receiver.on('payment.succeeded', () => { ran++ })
  const { body, contentType } = signCallback(samplePaymentFields(), token)
  const response = await receiver.handle({ kind: 'callback', body, contentType })
  // The receiver learns that the import failed asynchronously: wait until it says so, for half the test's timeout
  // at most (then told: false fails the test, and the script still ends).
  const told = () => debug.some((m) => m.includes('not installed'))
  for (const until = Date.now() + 30_000; !told() && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 10))
  console.log(JSON.stringify({ apiMissing, status: response.status, outcome: response.outcome, ran, told: told() }))
`

it('receives and handles a payment when @opentelemetry/api is not installed, saying so only at debug level', async () => {
  const { code, output } = await runScript(SCRIPT, [WITHOUT_OPENTELEMETRY])
  expect(code, output).toBe(0)
  const line = output.split('\n').find((text) => text.startsWith('{'))
  expect(JSON.parse(line ?? 'null'), output).toEqual({ apiMissing: true, status: 200, outcome: 'processed', ran: 1, told: true })
  expect(output).not.toMatch(/^(warn|error): /m)
}, 60_000)
