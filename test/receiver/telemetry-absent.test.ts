import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { withoutPackage } from '../without-package.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const WITHOUT_OPENTELEMETRY = withoutPackage('@opentelemetry/api')

/** Runs a module script from the repository root with tsx and extra --import hooks; its output and exit code. */
async function runScript(script: string, hooks: readonly string[]): Promise<{ code: unknown; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...hooks.map((hook) => `--import=${hook}`), '--input-type=module', '-e', script], { cwd: ROOT })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const code = await new Promise((resolve) => child.once('close', resolve))
  return { code, output }
}

const SCRIPT = `
  const { createReceiver } = await import('./src/index.ts')
  const { samplePaymentFields, signCallback } = await import('./src/testing.ts')
  const token = 'ab'.repeat(32)
  const debug = []
  const logger = { debug: (_d, m) => debug.push(m), info() {}, warn: (_d, m) => console.log('warn: ' + m), error: (_d, m) => console.log('error: ' + m) }
  let apiMissing = false
  try { await import('@opentelemetry/api') } catch { apiMissing = true }
  const receiver = createReceiver({ checksumToken: token, logger })
  let ran = 0
  receiver.on('payment.succeeded', () => { ran++ })
  const { body, contentType } = signCallback(samplePaymentFields(), token)
  const response = await receiver.handle({ kind: 'callback', body, contentType })
  // The receiver learns that the import failed asynchronously; give it a moment to say so.
  await new Promise((resolve) => setTimeout(resolve, 200))
  console.log(JSON.stringify({ apiMissing, status: response.status, outcome: response.outcome, ran, told: debug.some((m) => m.includes('not installed')) }))
`

it('receives and handles a payment when @opentelemetry/api is not installed, saying so only at debug level', async () => {
  const { code, output } = await runScript(SCRIPT, [WITHOUT_OPENTELEMETRY])
  expect(code, output).toBe(0)
  const line = output.split('\n').find((text) => text.startsWith('{'))
  expect(JSON.parse(line ?? 'null'), output).toEqual({ apiMissing: true, status: 200, outcome: 'processed', ran: 1, told: true })
  expect(output).not.toMatch(/^(warn|error): /m)
}, 60_000)
