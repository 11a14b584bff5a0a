/**
 * The buyer types their name and e-mail, and the service signs them into the result as given. A buyer who holds the
 * Auth Token from an earlier result that echoed it (`token`) can type it as either, and the new result is genuine:
 * nothing renamed, nothing to refuse. A signature-only receiver handles it as delivered, and the payment book keeps
 * the buyer's name and e-mail with the order, which the console's payment pages show.
 */
import { describe, expect, it } from 'vitest'
import { createConsole } from '../../src/console/console.js'
import { createReceiver, memoryStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'

describe('the Auth Token typed as the buyer\'s name or e-mail', () => {
  it.each([
    ['as the name', { buyer_name: AUTH }],
    ['inside the e-mail', { buyer_email: `${AUTH}@example.com` }],
  ])('%s: not in the payment book, nor on the console pages', async (_name, typed) => {
    const receiver = createReceiver({ signatureOnly: true, credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }, store: memoryStore(), logger: false })
    let handled = 0
    receiver.onAny(() => void handled++)
    const fields = samplePaymentFields({ uid: UID, ...typed })
    const response = await receiver.handle({ kind: 'callback', ...signCallback(fields, CHECKSUM) })
    expect(response.status).toBe(200)
    expect(handled).toBe(1)
    const console = createConsole(receiver, { authorize: () => true })
    for (const path of ['/payments', `/payment?order=${encodeURIComponent(fields.order_number as string)}`]) {
      const page = await console(new Request(`http://shop.test${path}`))
      expect(page.status).toBe(200)
      const text = await page.text()
      expect(text).toContain(fields.order_number as string)
      expect(text, path).not.toContain(AUTH)
    }
  })
})

describe("the Auth Token typed as the buyer's name, read back from the API", () => {
  const credentials = { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }

  async function shown(receiver: ReturnType<typeof createReceiver>, orderNumber: string): Promise<string> {
    const console = createConsole(receiver, { authorize: () => true })
    const pages = await Promise.all(['/payments', `/payment?order=${encodeURIComponent(orderNumber)}`].map(async (path) => (await console(new Request(`http://shop.test${path}`))).text()))
    return JSON.stringify([await receiver.payments.find(orderNumber), ...pages])
  }

  it('confirmed over the API: not in the event, the payment book or the console pages', async () => {
    const fields = samplePaymentFields({ uid: UID, buyer_name: AUTH })
    const client = { searchTransactions: async () => [{ ...fields, payment_status: true }] }
    const receiver = createReceiver({ client, credentials, store: memoryStore(), logger: false } as never)
    const names: unknown[] = []
    receiver.on('payment.succeeded', (event) => void names.push(event.payment.buyer, event.fields.buyer_name))
    expect((await receiver.handle({ kind: 'callback', ...signCallback(fields, CHECKSUM) })).status).toBe(200)
    expect(names).toHaveLength(2)
    expect(JSON.stringify(names)).not.toContain(AUTH)
    expect(await shown(receiver, fields.order_number as string)).not.toContain(AUTH)
  })

  it('handed over as a record the API answered (handleTrusted): not in the event nor the payment book', async () => {
    const fields = samplePaymentFields({ uid: UID, buyer_name: AUTH })
    const client = { searchTransactions: async () => [] }
    const receiver = createReceiver({ client, credentials, store: memoryStore(), logger: false } as never)
    const names: unknown[] = []
    receiver.on('payment.succeeded', (event) => void names.push(event.payment.buyer, event.fields.buyer_name))
    expect((await receiver.handleTrusted({ ...fields, payment_status: true })).status).toBe(200)
    expect(names).toHaveLength(2)
    expect(JSON.stringify(names)).not.toContain(AUTH)
    expect(await shown(receiver, fields.order_number as string)).not.toContain(AUTH)
  })
})
