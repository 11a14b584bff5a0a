import { requestChecksum } from '../../src/core/request/request-checksum.js'
import { type EmulatorOptions, type RunningEmulator, startEmulator } from '../../src/emulator/index.js'

export const DEMO = {
  uid: '0c0ffee0-d3e0-4a11-8f00-00000000d3e0',
  authToken: 'DemoAuthToken0000000',
  checksumToken: '0123456789abcdef'.repeat(4),
}
export const PARTNER = { uid: 'fa27e000-d3e0-4a11-8f00-00000000fa27', authToken: 'DemoPartnerToken0000', partnerUid: 'demo-partner-0001' }

export interface Emulator extends RunningEmulator {
  get(path: string, auth?: { uid: string; authToken: string } | null): Promise<Response>
  postForm(path: string, fields: Record<string, string>, auth?: { uid: string; authToken: string } | null): Promise<Response>
  control(path: string, body?: unknown): Promise<Response>
  /** Creates a payment through POST /v1/payments and returns its exchange_number. */
  pay(overrides?: Record<string, string>): Promise<string>
  complete(exchangeNumber: string, outcome: string): Promise<Record<string, unknown>>
}

export function basic(auth: { uid: string; authToken: string }): string {
  return `Basic ${Buffer.from(`${auth.uid}:${auth.authToken}`).toString('base64')}`
}

export type PaymentForm = Record<string, string> & Record<'order_number' | 'uid' | 'token' | 'checksum', string>

/** A merchant-variant payment request, signed with the demo merchant's Checksum Token unless told otherwise. */
export function paymentForm(overrides: Record<string, string> = {}, checksumToken = DEMO.checksumToken): PaymentForm {
  const signed = {
    buyer_email: 'aisyah@example.com',
    buyer_name: 'Nur Aisyah binti Ahmad',
    buyer_phone: '+60123456789',
    callback_url: 'http://127.0.0.1:9/fpx/callback',
    order_number: `ORD-${Math.random().toString(36).slice(2, 10).toUpperCase()}`,
    product_description: 'Two kilos of coffee beans',
    redirect_url: 'http://127.0.0.1:9/fpx/redirect',
    transaction_amount: '100.20',
    uid: DEMO.uid,
    ...overrides,
  }
  return { ...signed, token: DEMO.authToken, checksum: requestChecksum(signed, checksumToken), ...overrides }
}

export async function launch(options: EmulatorOptions = {}): Promise<Emulator> {
  const running = await startEmulator(options)
  const headers = (auth: { uid: string; authToken: string } | null | undefined): Record<string, string> =>
    auth === null ? {} : { authorization: basic(auth ?? DEMO) }
  const emulator: Emulator = Object.assign(Object.create(null) as object, running, {
    get: (path: string, auth?: { uid: string; authToken: string } | null) => fetch(`${running.baseUrl}${path}`, { headers: headers(auth) }),
    postForm: (path: string, fields: Record<string, string>, auth?: { uid: string; authToken: string } | null) =>
      fetch(`${running.baseUrl}${path}`, {
        method: 'POST',
        headers: { ...headers(auth), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      }),
    control: (path: string, body?: unknown) =>
      fetch(`${running.url}/__emulator${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    async pay(overrides: Record<string, string> = {}) {
      const response = await emulator.postForm('/v1/payments', paymentForm(overrides), null)
      if (response.status !== 200) throw new Error(`payment creation answered ${response.status}: ${await response.text()}`)
      await response.text()
      return response.headers.get('x-exchange-number') as string
    },
    async complete(exchangeNumber: string, outcome: string) {
      const response = await emulator.control(`/payments/${exchangeNumber}/complete`, { outcome })
      if (response.status !== 200) throw new Error(`completion answered ${response.status}: ${await response.text()}`)
      return (await response.json()) as Record<string, unknown>
    },
  })
  return emulator
}

/** The hidden inputs of a page's form (paymentFormHtml's), unescaped: what the browser would post. */
export function hiddenFields(html: string): Record<string, string> {
  const unescape = (text: string) => text.replace(/&#(\d+);/g, (_match, code: string) => String.fromCharCode(Number(code)))
  const fields: Record<string, string> = {}
  for (const found of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g))
    fields[unescape(found[1] ?? '')] = unescape(found[2] ?? '')
  return fields
}
