/*
 * `fpx-collect trigger --redirect` aimed at a redirect route: the app's 303 is the answer to report (status and
 * Location), not the page it points to, and it means the app handled the result (exit 0). Aimed at a callback
 * route (the default), a 3xx is the sign of a route behind a log-in redirect: a warning and exit 1.
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
  const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: UID, checksumToken: TOKEN }], logger: false })
  receiver.onAny((event) => void handled.push(event.state))
  const app = express()
  app.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks' }))
  // Built-in page for failures: no failureUrl.
  app.post('/fpx/redirect-page', fpxRedirect(receiver, {}))
  // A callback route mounted under a part of the app that wants a session: every POST is sent to the log-in page.
  app.use('/admin', (_request, response) => void response.redirect(303, '/login?next=/admin/fpx/callback'))
  app.post('/fpx/redirect-nowhere', (_request, response) => void response.status(302).end())
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
    const result = await runCli(['trigger', 'succeeded', '--url', `${base}/fpx/redirect`, '--redirect', '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout).toContain('303 See Other\nLocation: /thanks (not followed)')
    expect(thanksVisits).toBe(0)
    expect(handled).toEqual(['succeeded'])
  })

  it('exits 0 for a 200 result page, and 1 with the error page of a refused redirect', async () => {
    const [page, refused] = await Promise.all([
      runCli(['trigger', 'failed', '--url', `${base}/fpx/redirect-page`, '--redirect', '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } }),
      runCli(['trigger', 'succeeded', '--url', `${base}/fpx/redirect`, '--redirect', '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: 'cd'.repeat(32) } }),
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

  it('with --redirect, exits 1 for a redirect without a Location', async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', `${base}/fpx/redirect-nowhere`, '--redirect', '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('302 Found\nLocation: (none) (not followed)')
    expect(result.stderr).toContain('a redirect without a Location')
  })
})

describe('fpx-collect trigger at a callback route that answers 3xx', { timeout: 60_000 }, () => {
  it('warns that the route may sit behind a log-in redirect and exits 1; the handler never ran', async () => {
    const before = handled.length
    const result = await runCli(['trigger', 'succeeded', '--url', `${base}/admin/fpx/callback`, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('303 See Other\nLocation: /login?next=/admin/fpx/callback (not followed)')
    expect(result.stderr).toContain('fpx-collect trigger: warning: the callback route answered 303, a redirect to /login?next=/admin/fpx/callback.')
    expect(result.stderr).toContain('behind a log-in redirect')
    expect(result.stderr).toContain('pass --redirect')
    expect(handled.length).toBe(before)
  })

  it("says in its help that a callback route's 3xx exits 1 and what --redirect is for", async () => {
    const help = await runCli(['trigger', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}--redirect {2,}URL is your redirect_url route/m)
    expect(help.stdout).toContain('a 3xx from a\ncallback route included')
  })
})
