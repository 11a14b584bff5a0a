import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signCallback } from '../../src/testing.js'
import { DEMO, paymentInput } from '../client/helpers.js'
import { type ConsoleRig, noDialogs, shot, skipRedis, startConsoleRig } from './rig.js'
import { until } from './six-orders.js'

/**
 * What keeps the console safe, tried in Chromium on an Express mount: no authorize, no console; buyer-controlled
 * text stays text with the Content-Security-Policy switched off (so escaping alone is what is tested); a form
 * posted from another origin, or without the session's token, changes nothing; no secret on any page.
 */
const HOSTILE = {
  order_number: '<img src=x onerror=alert(1)>',
  buyer_name: '</script><script>alert(2)</script>',
  buyer_email: '<svg/onload=alert(3)>@x.io',
  reference: '"><img src=x onerror=alert(4)>',
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
}

describe.skipIf(skipRedis)('the console refuses every request without an authorize hook', () => {
  let rig: ConsoleRig
  beforeAll(async () => {
    rig = await startConsoleRig('express', { authorize: false })
  }, 30_000)
  afterAll(() => rig?.close())

  it('answers 403 to every page and action, saying what to give', async () => {
    const page = await rig.browser.newPage()
    for (const path of ['', '/', '/payments?q=x', '/inbox', '/refusals', '/payment?order=x']) {
      const response = await page.goto(`${rig.consoleUrl}${path}`)
      expect(response?.status()).toBe(403)
      expect(await page.locator('body').textContent()).toContain('mounted without an authorize hook')
    }
    await shot(page, 'refused-without-authorize')
    // An action is refused before its form is read: the dead letters are untouched.
    const posted = await page.request.post(`${rig.consoleUrl}/inbox/retry`, { form: { all: 'matching', status: 'dead' } })
    expect(posted.status()).toBe(403)
    await page.close()
  })
})

describe.skipIf(skipRedis)('the console keeps buyers’ text as text and refuses what another site sends', () => {
  let rig: ConsoleRig
  let context: BrowserContext
  let page: Page
  let attacker: Server
  let attackerUrl: string
  const dialogs: string[] = []
  const pages: string[] = []
  /** Opens a console page and keeps its HTML (as the browser holds it) for the checks on every page. */
  const visit = async (url: string) => {
    const response = await page.goto(url)
    pages.push(await page.content())
    return response
  }

  beforeAll(async () => {
    // The emulator puts the Auth Token in its results as `token`, as the service is seen to do: it must not show.
    rig = await startConsoleRig('express', { emulator: { config: { includeTokenInResults: true } } })
    // A paid payment whose every buyer-controlled text is markup, its handler failing: its result as delivered,
    // params included, is on its page too.
    rig.failing.add(HOSTILE.order_number)
    const created = await rig.client.createPayment(
      paymentInput({
        callback_url: `${rig.appUrl}/fpx/callback`,
        order_number: HOSTILE.order_number,
        buyer_name: HOSTILE.buyer_name,
        buyer_email: HOSTILE.buyer_email,
        params: { reference1_label: HOSTILE.buyer_name, reference1: HOSTILE.reference },
      }),
    )
    await rig.emulator.complete(created.exchangeNumber as string, 'approve')
    await until('the hostile dead letter', async () => (await rig.receiver.inbox.counts()).dead, 1)
    // A forged callback claiming the hostile numbers: refused, kept among the latest refusals with what it claimed.
    const forged = signCallback({ exchange_number: HOSTILE.reference, order_number: HOSTILE.buyer_name, payment_status: 'true', transaction_amount: '1.00' }, 'ff'.repeat(32))
    const answer = await fetch(`${rig.appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': forged.contentType }, body: forged.body })
    expect(answer.status).toBe(401)

    // The escaping alone is under test: the page's CSP, which forbids every script, is switched off.
    context = await rig.browser.newContext({ bypassCSP: true })
    await context.addCookies([{ name: 'shop_operator', value: rig.operatorCookie, url: rig.appUrl }])
    page = await context.newPage()
    page.setDefaultTimeout(5_000)
    noDialogs(page, dialogs)
    page.on('response', (response) => {
      if (response.headers()['content-type']?.startsWith('text/html')) void response.text().then((text) => pages.push(text), () => {})
    })
    attacker = createServer((_request, response) => {
      // The attacker's page: forms aimed at the console, one with a guessed token, one with the operator's own.
      const token = decodeURIComponent(new URL(_request.url ?? '/', 'http://x').searchParams.get('token') ?? 'guessed')
      response.setHeader('content-type', 'text/html')
      response.end(`<form method="post" action="${rig.consoleUrl}/inbox/retry"><input type="hidden" name="csrf" value="${token}"><input type="hidden" name="all" value="matching"><input type="hidden" name="status" value="dead"><button>Win a prize</button></form>`)
    })
    attackerUrl = await listen(attacker)
  }, 60_000)
  afterAll(async () => {
    await context?.close()
    attacker?.close()
    await rig?.close()
  })

  it('shows the hostile order, its search, its delivered fields, the API record and the refusal as text: no script ran, nothing was injected', async () => {
    const injected = () => page.locator('img, script, iframe, svg[onload], [onerror], [onload]').count()
    await visit(rig.consoleUrl)
    await page.fill('input[name="q"]', HOSTILE.order_number)
    await page.click('header button[type="submit"]')
    await page.waitForURL(/\/payment\?/)
    pages.push(await page.content())
    expect(await page.locator('h1 .mono').textContent()).toBe(HOSTILE.order_number)
    const summary = await page.locator('dl').textContent()
    for (const value of [HOSTILE.buyer_name, HOSTILE.buyer_email]) expect(summary).toContain(value)
    expect(await page.locator('table.api-record').textContent()).toContain(HOSTILE.buyer_name)
    // params as the callback delivered them, in the dead letter's fields.
    expect(await page.locator('table.delivered').textContent()).toContain(JSON.stringify(HOSTILE.reference).slice(1, -1))
    expect(await injected()).toBe(0)
    await shot(page, 'hostile-payment')
    // The forged callback's claimed exchange_number: found by search, shown as what it is.
    await visit(`${rig.consoleUrl}/payments?q=${encodeURIComponent(HOSTILE.reference)}`)
    expect(page.url()).toContain('/payment?exchange=')
    expect(await page.locator('h1 .mono').textContent()).toBe(HOSTILE.reference)
    expect(await page.locator('tr[data-event="refused"]').textContent()).toContain('what the message claimed')
    expect(await injected()).toBe(0)
    // Not found: the search text comes back in the heading and in the search box.
    const nothing = '"><img src=y onerror=alert(5)> no such order'
    await visit(`${rig.consoleUrl}/payments?q=${encodeURIComponent(nothing)}`)
    expect(await page.locator('h1 .mono').textContent()).toBe(nothing)
    expect(await page.inputValue('input[name="q"]')).toBe(nothing)
    expect(await injected()).toBe(0)
    await visit(`${rig.consoleUrl}/refusals`)
    expect(await page.locator('td.claimed').first().textContent()).toContain(HOSTILE.buyer_name)
    await visit(`${rig.consoleUrl}/inbox`)
    expect(await page.locator('tr[data-inbox="dead"]').textContent()).toContain(HOSTILE.order_number)
    for (const path of ['/refusals', '/inbox', '/payments', '/']) {
      await visit(`${rig.consoleUrl}${path}`)
      expect(await injected()).toBe(0)
    }
    expect(dialogs).toEqual([])
  })

  it('says nothing secret on any page', async () => {
    expect(pages.length).toBeGreaterThan(6)
    // The emulator did put it in the result: the dead letter's fields hold it, and its page left it out.
    const [dead] = await rig.receiver.inbox.list({ status: 'dead' })
    expect((await rig.receiver.inbox.show(dead!.exchangeNumber))[0]?.fields.token).toBe('[redacted]')
    const basic = Buffer.from(`${DEMO.uid}:${DEMO.authToken}`).toString('base64')
    for (const html of pages) for (const secret of [DEMO.authToken, DEMO.checksumToken, basic]) expect(html).not.toContain(secret)
  })

  it('sends a Content-Security-Policy with no source and no script, and no script or outside address in its pages', async () => {
    const response = await visit(rig.consoleUrl)
    const policy = response?.headers()['content-security-policy'] ?? ''
    expect(policy).toMatch(/default-src 'none'/)
    expect(policy).not.toMatch(/script-src|https?:|\*/)
    for (const html of pages) {
      expect(html).not.toMatch(/<script/i)
      expect(html).not.toMatch(/(src|href|action)="(https?:)?\/\/(?!127\.0\.0\.1)/)
    }
  })

  it('refuses a retry posted from another origin, with a guessed token or with the operator’s own', async () => {
    await visit(`${rig.consoleUrl}/inbox`)
    const token = await page.locator('input[name="csrf"]').first().inputValue()
    for (const given of ['guessed', token]) {
      await page.goto(`${attackerUrl}/?token=${encodeURIComponent(given)}`)
      await page.click('button')
      await page.waitForLoadState()
      expect(await page.locator('h1').textContent()).toBe('Refused: not a form of this console')
      expect(await page.locator('main').textContent()).toMatch(/another site|Origin/)
    }
    expect(await rig.receiver.inbox.counts()).toMatchObject({ dead: 1 })
  })

  it('refuses a same-origin retry without the session’s token, and takes it with the token', async () => {
    // The context's own requests carry its cookies but no Origin: only the token stands between them and a retry.
    const refused = await page.request.post(`${rig.consoleUrl}/inbox/retry`, { form: { all: 'matching', status: 'dead', csrf: 'not-the-token' }, maxRedirects: 0 })
    expect(refused.status()).toBe(403)
    expect(await rig.receiver.inbox.counts()).toMatchObject({ dead: 1 })
    await page.goto(`${rig.consoleUrl}/inbox`)
    const token = await page.locator('input[name="csrf"]').first().inputValue()
    const taken = await page.request.post(`${rig.consoleUrl}/inbox/retry`, { form: { all: 'matching', status: 'dead', csrf: token }, maxRedirects: 0 })
    expect(taken.status()).toBe(303)
    expect(taken.headers().location).toContain('done=retry&count=1')
  })
})
