import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runCli } from './run.js'

/** An app that answers every delivery 500, promptly: its latency holds steady, yet nothing it was sent was taken. */
let server: Server
let app: string

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.statusCode = 500
      res.end('internal error')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  app = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

it('does not report that all held when every delivery was answered 500', async () => {
  const args = ['rehearse', '--callback-url', `${app}/cb`, '--redirect-url', `${app}/rd`, '--rate', '5', '--duration', '3', '--settle', '1', '--port', '0', '--json']
  const result = await runCli(args)
  expect(result.code).toBe(1)
  const report = JSON.parse(result.stdout) as { errors: number; deliveries: { answered: number }; saturation: { culprit: string; why: string } }
  expect(report.deliveries.answered).toBeGreaterThan(0)
  expect(report.errors).toBeGreaterThanOrEqual(report.deliveries.answered)
  // "kept up" with no word of the errors would tell the merchant their app coped.
  expect(report.saturation.why).toMatch(/error/)
}, 60_000)

it('names the app when it never answers (it hangs), rather than "too few answers to tell"', async () => {
  const hanging = createServer((req) => req.resume())
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/cb`
  try {
    const result = await runCli(['rehearse', '--callback-url', url, '--rate', '3', '--duration', '2', '--settle', '1', '--port', '0', '--json'])
    expect(result.code).toBe(1)
    const report = JSON.parse(result.stdout) as { deliveries: { answered: number }; saturation: { culprit: string; why: string } }
    expect(report.deliveries.answered).toBe(0)
    expect(report.saturation.culprit).toBe('app')
    expect(report.saturation.why).toMatch(/still waiting/)
  } finally {
    hanging.closeAllConnections()
    await new Promise<void>((resolve) => hanging.close(() => resolve()))
  }
}, 60_000)

it('says what the error count adds up, and the parts add up to it', async () => {
  const args = ['rehearse', '--callback-url', `${app}/cb`, '--rate', '5', '--duration', '2', '--settle', '1', '--port', '0']
  const result = await runCli(args)
  expect(result.code).toBe(1)
  const line = /^Errors: (\d+) \((.+)\)$/m.exec(result.stdout)
  expect(line, result.stdout).not.toBeNull()
  const [, total, parts] = line as RegExpExecArray
  expect(parts).toMatch(/\d+ answers 4xx\/5xx or none/)
  const sum = (parts as string).split(', ').reduce((n, part) => n + Number(/^\d+/.exec(part)?.[0]), 0)
  expect(sum).toBe(Number(total))
}, 60_000)
