import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../client/helpers.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { runCli } from './run.js'
import { cliStores } from './stores.js'

const available = await serviceAvailable('Redis', REDIS_URL)

/**
 * A buyer types their own e-mail and name; an e-mail with an ESC in it passes the e-mail rule ([^\s@]), and a
 * genuine signed result carries it back. The operator's terminal must not receive it raw: ESC ] 0 ; … BEL retitles
 * the window, ESC [ 2 J clears the screen and hides the lines above, and C1 controls do the same on some terminals.
 */
describe.skipIf(!available)('fpx-collect payments and timeline print no terminal control characters from a result', { timeout: 120_000 }, () => {
  const { cases } = cliStores('escapes')
  const [, store, where] = cases[1] as (typeof cases)[number]

  it('payments list, payments show and timeline replace them', async () => {
    const tag = randomUUID().slice(0, 8)
    const order = `ESC-${tag}`
    const email = `a\u001b]0;owned\u0007\u001b[2J\u009b31m@x.example`
    const receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: store(), sweep: false, logger: false as never })
    const fields = samplePaymentFields({ order_number: order, exchange_number: `EX-${tag}`, payment_status: 'true', transaction_amount: '100.20', uid: DEMO.uid, buyer_email: email, buyer_name: `Ali\u009b2J` })
    receiver.on('payment.succeeded', () => {})
    const handled = await receiver.handle({ kind: 'callback', body: signCallback(fields, DEMO.checksumToken).body, contentType: 'application/x-www-form-urlencoded' })
    expect(handled, JSON.stringify(handled)).toMatchObject({ outcome: 'processed' })
    await receiver.flush()
    await receiver.close()
    const [list, show, timeline, json] = await Promise.all([
      runCli(['payments', 'list', '--search', order, ...where]),
      runCli(['payments', 'show', order, ...where]),
      runCli(['timeline', order, ...where]),
      runCli(['payments', 'list', '--search', order, '--json', ...where]),
    ])
    for (const result of [list, show, timeline]) {
      expect(result.code).toBe(0)
      // eslint-disable-next-line no-control-regex
      expect(result.stdout.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/)
    }
    expect(list.stdout).toContain(order)
    expect(show.stdout).toContain('@x.example')
    // --json keeps the value exactly (JSON escapes the controls itself).
    expect(JSON.parse(json.stdout).payments[0].buyerEmail).toBe(email)
  })
})
