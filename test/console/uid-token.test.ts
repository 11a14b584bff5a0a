import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxConsole } from '../../adapters/express.js'
import express from 'express'
import { createReceiver, memoryStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO, memoryLogger } from '../client/helpers.js'

/**
 * A partner's receiver finds each message's Checksum Token by its uid (a resolver). A result may echo the Auth
 * Token as `token`, and names are not signed: the buyer can resend their result with the token's value under
 * `uid` (the values after it renamed to sort after `uid`, so the checksum still matches). The resolver knows no
 * such uid and the delivery is refused `unknown_uid`; its message, which the answer, the log and the console's
 * refusals page carry, must not name that "uid".
 */
describe('an unknown_uid refusal does not repeat an Auth Token moved under uid', () => {
  const { lines, logger } = memoryLogger()
  const receiver = createReceiver({
    signatureOnly: true,
    resolveChecksumToken: (uid: string) => (uid === DEMO.uid ? DEMO.checksumToken : undefined),
    store: memoryStore(),
    logger,
    sweep: false,
  } as never)
  let server: Server
  let url: string

  beforeAll(async () => {
    const app = express()
    app.post('/fpx/callback', fpxCallback(receiver))
    app.use('/admin/payments', fpxConsole(receiver, { authorize: () => 'Siti' }))
    server = createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await receiver.close()
    await new Promise((resolve) => server.close(resolve))
  })

  it('names neither in the answer, the log nor the refusals page', async () => {
    const fields = samplePaymentFields({ uid: DEMO.uid, token: DEMO.authToken })
    const genuine = new URLSearchParams(signCallback(fields, DEMO.checksumToken).body)
    // Sorted: …, token, transaction_amount, transaction_amount_received, transaction_fee, uid. The token's value
    // under `uid`, the four after it under names that sort after `uid`.
    const renamed: Record<string, string> = { token: 'uid', transaction_amount: 'v1', transaction_amount_received: 'v2', transaction_fee: 'v3', uid: 'v4' }
    const copy = new URLSearchParams([...genuine].map(([name, value]) => [renamed[name] ?? name, value] as [string, string]))
    const answer = await fetch(`${url}/fpx/callback`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: copy.toString() })
    const body = await answer.text()
    expect(answer.status).toBe(401)
    expect(body).toContain('unknown_uid')
    expect(body).not.toContain(DEMO.authToken)
    expect(lines.join('\n')).toContain('unknown_uid')
    expect(lines.join('\n')).not.toContain(DEMO.authToken)
    const page = await fetch(`${url}/admin/payments/refusals`)
    const text = await page.text()
    expect(page.status).toBe(200)
    expect(text).toContain('data-code="unknown_uid"')
    expect(text).not.toContain(DEMO.authToken)
    // A uid of the API UID's form is still named, for the operator who must configure it.
    const other = samplePaymentFields({ uid: '0c0ffee0-d3e0-4a11-8f00-00000000beef' })
    const signed = signCallback(other, DEMO.checksumToken)
    const unknown = await fetch(`${url}/fpx/callback`, { method: 'POST', headers: { 'content-type': signed.contentType }, body: signed.body })
    expect(await unknown.text()).toContain('0c0ffee0-d3e0-4a11-8f00-00000000beef')
  })
})
