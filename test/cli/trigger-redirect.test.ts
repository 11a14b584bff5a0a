/*
 * `fpx-collect trigger` aimed at a redirect route: the app's 303 is the answer to report (status and Location),
 * not the page it points to, and it means the app handled the result (exit 0).
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxRedirect } from '../../adapters/express.js'
import { createReceiver } from '../../src/index.js'
import { runCli, TOKEN } from './run.js'

const UID = '11111111-2222-4333-8444-555555555555'
const handled: string[] = []
let thanksVisits = 0
let server: Server
let base: string

beforeAll(async () => {
  const receiver = createReceiver({ credentials: [{ uid: UID, checksumToken: TOKEN }], logger: false })
  receiver.onAny((event) => void handled.push(event.state))
  const app = express()
  app.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks' }))
  // Built-in page for failures: no failureUrl.
  app.post('/fpx/redirect-page', fpxRedirect(receiver, {}))
  app.all('/thanks', (_request, response) => {
    thanksVisits++
    response.status(404).send('a followed redirect would land here')
  })
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('fpx-collect trigger at a redirect route', { timeout: 60_000 }, () => {
  it('reports the 303 and its Location without following it, and exits 0', async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', `${base}/fpx/redirect`, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toContain('303 See Other\nLocation: /thanks (not followed)')
    expect(thanksVisits).toBe(0)
    expect(handled).toEqual(['succeeded'])
  })

  it('exits 0 for a 200 result page, and 1 with the error page of a refused redirect', async () => {
    const [page, refused] = await Promise.all([
      runCli(['trigger', 'failed', '--url', `${base}/fpx/redirect-page`, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } }),
      runCli(['trigger', 'succeeded', '--url', `${base}/fpx/redirect`, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: 'cd'.repeat(32) } }),
    ])
    expect(page.code, page.stdout + page.stderr).toBe(0)
    expect(page.stdout).toContain('200 OK')
    expect(page.stdout).toContain('Payment unsuccessful')
    expect(page.stdout).not.toContain('Location:')
    expect(refused.code).toBe(1)
    expect(refused.stdout).toContain('401 Unauthorized')
    expect(refused.stdout).toContain('checksum_mismatch')
    expect(refused.stdout + refused.stderr).not.toContain('cd'.repeat(32))
    expect(thanksVisits).toBe(0)
  })
})
