import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Emulator, launch, paymentForm } from './harness.js'

/** The page payment creation answers with and the bank-selection page, read as plain HTML over HTTP. */
let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

async function page(path: string): Promise<{ status: number; html: string; type: string | null }> {
  const response = await emulator.get(path, null)
  return { status: response.status, html: await response.text(), type: response.headers.get('content-type') }
}

function noRedirect(path: string, fields: Record<string, string> = {}): Promise<Response> {
  return fetch(`${emulator.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  })
}

describe('payment creation page', () => {
  it('submits itself to the bank-selection page only with redirect_post=true', async () => {
    const auto = await emulator.postForm('/v1/payments', { ...paymentForm(), redirect_post: 'true' }, null)
    const autoHtml = await auto.text()
    const exchangeNumber = auto.headers.get('x-exchange-number') as string
    expect(autoHtml).toContain(`action="${emulator.baseUrl}/pay/${exchangeNumber}"`)
    expect(autoHtml).toContain(`document.getElementById('continue').submit()`)
    const manual = await emulator.postForm('/v1/payments', paymentForm(), null)
    expect(await manual.text()).not.toContain('.submit()')
  })
})

describe('bank selection', () => {
  it('dropdown by default: online banks selectable, offline ones disabled, no cancel, no time-out', async () => {
    const exchangeNumber = await emulator.pay()
    const described = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as { payment_page_url: string }
    expect(described.payment_page_url).toBe(`${emulator.baseUrl}/pay/${exchangeNumber}`)
    const { status, html, type } = await page(`/pay/${exchangeNumber}`)
    expect(status).toBe(200)
    expect(type).toMatch(/^text\/html/)
    expect(html).toContain('<select id="bank" name="buyer_bank_code" required data-layout="dropdown">')
    expect(html).toContain('<option value="MB2U0227">Maybank2U</option>')
    expect(html).toContain('<option value="UOB0226" disabled>UOB Bank (offline)</option>')
    expect(html).toContain(`action="${emulator.baseUrl}/pay/${exchangeNumber}/bank"`)
    expect(html).not.toContain('/cancel"')
    expect(html).not.toContain('data-timeout-ms')
  })

  it('grid per fpx_bank_selection, with the B2B1 list for a B2B1 payment', async () => {
    const exchangeNumber = await emulator.pay({ fpx_bank_selection: 'grid', model: 'B2B1' })
    const { html } = await page(`/pay/${exchangeNumber}`)
    expect(html).toContain('data-layout="grid"')
    // One button per bank: its colour, a two-letter monogram and its name (no logos).
    expect(html).toMatch(/<button type="submit" name="buyer_bank_code" value="MBB0228" class="bank" style="--bank:#ffc20e;--bank-ink:#1a1a1a"><span class="monogram" aria-hidden="true">MA<\/span><span>Maybank2E<\/span><\/button>/)
    expect(html).toMatch(/value="RHB0218" class="bank" style="[^"]*" disabled>.*RHB Reflex<span class="offline">Offline<\/span>/)
    expect(html).not.toContain('<select')
  })

  it('a cancel button when cancel_url is set, which leads there', async () => {
    const exchangeNumber = await emulator.pay({ cancel_url: 'https://shop.example/cart?from=fpx&step=2' })
    const { html } = await page(`/pay/${exchangeNumber}`)
    expect(html).toContain(`<form method="post" action="${emulator.baseUrl}/pay/${exchangeNumber}/cancel" class="actions">`)
    const cancelled = await noRedirect(`/pay/${exchangeNumber}/cancel`, { cancel: '1' })
    expect(cancelled.status).toBe(303)
    expect(cancelled.headers.get('location')).toBe('https://shop.example/cart?from=fpx&step=2')
    const without = await emulator.pay()
    expect((await noRedirect(`/pay/${without}/cancel`)).status).toBe(404)
  })

  it('the 3-minute time-out when timeout_url is set', async () => {
    const exchangeNumber = await emulator.pay({ timeout_url: 'https://shop.example/timeout' })
    const { html } = await page(`/pay/${exchangeNumber}`)
    const remaining = Number(/data-timeout-ms="(\d+)"/.exec(html)?.[1])
    expect(remaining).toBeGreaterThan(170_000)
    expect(remaining).toBeLessThanOrEqual(180_000)
    expect(html).toContain(`data-url="${emulator.baseUrl}/pay/${exchangeNumber}/timeout"`)
    const timedOut = await fetch(`${emulator.baseUrl}/pay/${exchangeNumber}/timeout`, { redirect: 'manual' })
    expect(timedOut.status).toBe(303)
    expect(timedOut.headers.get('location')).toBe('https://shop.example/timeout')
  })

  it('a choice made after the time-out goes to timeout_url (time-out shortened by option)', async () => {
    const quick = await launch({ bankPageTimeoutMs: 0 })
    try {
      const exchangeNumber = await quick.pay({ timeout_url: 'https://shop.example/timeout' })
      const html = await (await quick.get(`/pay/${exchangeNumber}`, null)).text()
      expect(html).toContain('data-timeout-ms="0"')
      expect(html).toContain('<meta http-equiv="refresh" content="0;url=')
      const late = await fetch(`${quick.baseUrl}/pay/${exchangeNumber}/bank`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'buyer_bank_code=MB2U0227',
        redirect: 'manual',
      })
      expect(late.status).toBe(303)
      expect(late.headers.get('location')).toBe('https://shop.example/timeout')
    } finally {
      await quick.stop()
    }
  })

  it('escapes what the merchant sent', async () => {
    const exchangeNumber = await emulator.pay({ product_description: '<script>alert("x")</script> & \'more\'' })
    const { html } = await page(`/pay/${exchangeNumber}`)
    expect(html).not.toContain('<script>alert')
    expect(html).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;more&#39;')
  })

  it('answers HTML, not JSON, for an unknown payment or an offline bank', async () => {
    const missing = await page('/pay/ABCDE0000000000')
    expect(missing.status).toBe(404)
    expect(missing.type).toMatch(/^text\/html/)
    const exchangeNumber = await emulator.pay()
    const offline = await emulator.postForm(`/pay/${exchangeNumber}/bank`, { buyer_bank_code: 'UOB0226' }, null)
    expect(offline.status).toBe(422)
    expect(await offline.text()).toContain('the bank is offline')
  })
})
