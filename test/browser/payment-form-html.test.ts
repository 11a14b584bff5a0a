/*
 * paymentFormHtml in real Chromium, with hostile buyer input: the browser posts exactly the values
 * buildPaymentForm signed (the emulator then accepts their checksum), and nothing in them runs as script.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, type PaymentForm, type PaymentInput, paymentFormHtml } from '../../src/client/index.js'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'
import { CHROMIUM, skipBrowser } from './harness.js'

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking']

// Each tries to run script through a different way out of an attribute value or the form.
const HOSTILE: Record<string, Partial<PaymentInput>> = {
  'a script tag': {
    buyer_name: `"><script>alert('name');navigator.sendBeacon('/pwned?name')</script>`,
    product_description: `</form><img src=x onerror="alert('product');navigator.sendBeacon('/pwned?product')">`,
  },
  'quotes and ampersands': {
    buyer_name: `O'Brien "Bob" & Sons &amp; &lt;b&gt; &#34;`,
    product_description: `Teh & roti 'special' "x" <b>bold</b> ' onfocus='alert(1)' autofocus='`,
  },
  unicode: {
    buyer_name: 'Nur Aisyah 张伟 Ñoño Đức 👩🏽‍💻',
    product_description: 'Kopi ☕ — RM 5 · ½ kg · مرحبا',
    params: { reference1_label: `"><svg onload="alert('params')">`, reference1: `&quot;'</script><script>alert(2)</script>` },
  },
}

describe.skipIf(skipBrowser)('paymentFormHtml in Chromium', () => {
  let browser: Browser
  let emulator: Emulator
  let server: Server
  let shop: string
  let pageHtml = ''
  const beacons: string[] = []

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS })
    emulator = await launch()
    // The shop: serves the page under test, and counts beacons a script that should never run would send.
    server = createServer((request, response) => {
      if (request.url?.startsWith('/pwned')) beacons.push(request.url)
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(pageHtml)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    shop = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await emulator?.stop()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  })

  const client = () => createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
  let orders = 0

  function formFor(input: Partial<PaymentInput>): PaymentForm {
    return client().buildPaymentForm({
      order_number: `FORM-${process.pid}-${++orders}`,
      buyer_name: 'Tan Mei Ling',
      buyer_email: 'mei@example.com',
      buyer_phone: '+60129876543',
      transaction_amount: '42.50',
      product_description: 'Teh tarik set',
      callback_url: `${shop}/fpx/callback`,
      redirect_url: `${shop}/fpx/redirect`,
      ...input,
    }, { exposeAuthToken: true })
  }

  /** Opens the page and returns the body the browser posts to the service; the post itself is held back. */
  async function posted(page: Page, html: string, submit?: () => Promise<void>): Promise<{ body: string; dialogs: string[] }> {
    const dialogs: string[] = []
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    let resolveBody: (body: string) => void = () => {}
    const body = new Promise<string>((resolve) => (resolveBody = resolve))
    await page.route(`${emulator.baseUrl}/v1/payments`, async (route) => {
      resolveBody(route.request().postData() ?? '')
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>held</p>' })
    })
    pageHtml = html
    await page.goto(`${shop}/pay`)
    await submit?.()
    return { body: await body, dialogs }
  }

  it.each(Object.entries(HOSTILE))('%s: posts exactly the signed values, the service accepts them, and no script of theirs runs', async (_name, input) => {
    const form = formFor(input)
    const page = await browser.newPage()
    try {
      const { body, dialogs } = await posted(page, paymentFormHtml(form))
      expect(dialogs).toEqual([])
      expect(beacons).toEqual([])
      expect([...new URLSearchParams(body)]).toEqual(Object.entries(form.fields))
      // The service checks the checksum over what the browser sent: unchanged values pass.
      const answer = await emulator.postForm('/v1/payments', Object.fromEntries(new URLSearchParams(body)), null)
      expect(answer.status, await answer.clone().text()).toBe(200)
      expect(await answer.text()).toContain('Pay RM 42.50')
    } finally {
      await page.close()
    }
  })

  it('without JavaScript, shows the button, which posts the same values', async () => {
    const form = formFor(HOSTILE['a script tag']!)
    const context = await browser.newContext({ javaScriptEnabled: false })
    const page = await context.newPage()
    try {
      const { body, dialogs } = await posted(page, paymentFormHtml(form, { buttonText: 'Pay with FPX' }), async () => {
        await page.getByRole('button', { name: 'Pay with FPX' }).click()
      })
      expect([...new URLSearchParams(body)]).toEqual(Object.entries(form.fields))
      expect(dialogs).toEqual([])
    } finally {
      await context.close()
    }
    expect(beacons).toEqual([])
  })

  it('as a fragment in a page of its own, with a field named submit, still submits itself', async () => {
    const form = formFor({})
    const fields = { ...form.fields, submit: 'kept', action: 'kept too' }
    const page = await browser.newPage()
    try {
      const html = `<!doctype html><meta charset="utf-8"><title>Shop</title><h1>Kedai</h1>${paymentFormHtml({ ...form, fields }, { fragment: true })}`
      const { body } = await posted(page, html)
      expect([...new URLSearchParams(body)]).toEqual(Object.entries(fields))
    } finally {
      await page.close()
    }
  })
})
