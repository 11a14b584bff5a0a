import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startCli } from './run.js'

// Ctrl+C during a rehearsal: the run stops, the emulator's port is closed, and the report of what ran is still printed.
let app: Server
let url: string
beforeAll(async () => {
  app = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`
})
afterAll(() => new Promise<void>((resolve) => app.close(() => resolve())))

it('prints the report of the payments made so far when interrupted', async () => {
  const child = startCli(['rehearse', '--callback-url', url, '--rate', '2', '--duration', '60', '--settle', '1', '--port', '0', '--json'])
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
    if (/\[\s*2 s\]/.test(stderr)) child.kill('SIGINT')
  })
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)))
  expect(stderr).not.toMatch(/at .*\.ts:\d+/)
  const report = JSON.parse(stdout) as Record<string, unknown>
  expect(JSON.stringify(report)).toMatch(/interrupt/i)
  expect(code).not.toBeNull()
}, 30_000)
