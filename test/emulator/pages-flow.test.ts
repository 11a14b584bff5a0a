import { describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { emulatorWithMerchant, settled } from './delivery-merchant.js'
import { DEMO } from './harness.js'

/**
 * A buyer's journey through the hosted pages by plain form posts, as a browser without scripts would make them:
 * bank selection → simulated bank → the self-submitting form back to the merchant, and the callback beside it.
 */
const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: DEMO.uid, checksumToken: DEMO.checksumToken }] })

const { emulator, merchant } = await emulatorWithMerchant({ delivery: { initialDelayMs: 5, maxDelayMs: 20 } })

function unescape(text: string): string {
  return text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
}

/** The form a page would submit: its action and its hidden fields, in order. */
function formOf(html: string, id: string): { action: string; fields: [string, string][] } {
  const form = new RegExp(`<form id="${id}" method="post" action="([^"]*)"[^>]*>([\\s\\S]*?)</form>`).exec(html)
  if (form === null) throw new Error(`no form #${id} in:\n${html}`)
  const fields = [...(form[2] ?? '').matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)].map(
    ([, name, value]) => [unescape(name ?? ''), unescape(value ?? '')] as [string, string],
  )
  return { action: unescape(form[1] ?? ''), fields }
}

function post(url: string, fields: Record<string, string> | [string, string][]): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  })
}

/** The bank's log-in form, filled and posted; answers the page that follows. */
async function logIn(loginHtml: string, userId = 'tan.mei'): Promise<Response> {
  const login = formOf(loginHtml, 'bank-login')
  return post(login.action, [...login.fields, ['user_id', userId], ['password', 'any']])
}

/** Selection page → the bank's log-in → its confirmation page → the bank's answer; returns the page the browser gets back. */
async function throughTheBank(exchangeNumber: string, bankCode: string, outcome: string): Promise<Response> {
  expect((await emulator.get(`/pay/${exchangeNumber}`, null)).status).toBe(200)
  const loginPage = await post(`${emulator.baseUrl}/pay/${exchangeNumber}/bank`, { buyer_bank_code: bankCode })
  expect(loginPage.status).toBe(200)
  const bankPage = await logIn(await loginPage.text())
  expect(bankPage.status).toBe(200)
  const html = await bankPage.text()
  expect(html).toContain('Logged in as <strong data-user-id>tan.mei</strong>')
  expect(html).toContain(`value="${outcome}"`)
  const answer = formOf(html, 'bank-answer')
  return post(answer.action, [...answer.fields, ['outcome', outcome]])
}

function pay(overrides: Record<string, string> = {}): Promise<string> {
  return emulator.pay({ callback_url: merchant.callbackUrl, redirect_url: merchant.redirectUrl, ...overrides })
}

describe('hosted bank flow', () => {
  it('approve: the browser posts the signed fields to redirect_url, the callback arrives, the handler runs once', async () => {
    const exchangeNumber = await pay({ buyer_name: `O'Brien "Bob" <b>` })
    const page = await throughTheBank(exchangeNumber, 'MB2U0227', 'approve')
    const html = await page.text()
    expect(html).toContain(`document.getElementById('redirect');setTimeout(function(){f.submit()}`)
    expect(html).toContain('Processing your payment')
    const redirect = formOf(html, 'redirect')
    expect(redirect.action).toBe(merchant.redirectUrl)
    const body = new URLSearchParams(redirect.fields).toString()
    const verified = await receiver.verify({ body, contentType: 'application/x-www-form-urlencoded' })
    expect(verified.state).toBe('succeeded')
    expect(verified.payment.exchangeNumber).toBe(exchangeNumber)
    expect(Object.fromEntries(redirect.fields)).toMatchObject({ buyer_name: `O'Brien "Bob" <b>`, fpx_bank: 'Maybank2U', fpx_debit_auth_code: '00' })
    const back = await post(redirect.action, redirect.fields)
    expect(back.status).toBe(303)
    expect(back.headers.get('location')).toBe('/paid')
    expect((await settled(emulator, exchangeNumber))[0]?.state).toBe('delivered')
    expect(merchant.events.map((event) => event.state)).toEqual(['succeeded'])
  })

  it.each([
    ['reject', '51'],
    ['cancel', '1C'],
  ])('%s: the redirect carries fpx_debit_auth_code %s and a failed payment', async (outcome, code) => {
    const exchangeNumber = await pay({ 'params[reference1_label]': 'Table', 'params[reference1]': '12' })
    const redirect = formOf(await (await throughTheBank(exchangeNumber, 'PBB0233', outcome)).text(), 'redirect')
    expect(redirect.fields).toContainEqual(['params[reference1]', '12'])
    const verified = await receiver.verify({ body: new URLSearchParams(redirect.fields).toString(), contentType: 'application/x-www-form-urlencoded' })
    expect(verified.state).toBe('failed')
    expect(verified.payment.params).toEqual({ reference1_label: 'Table', reference1: '12' })
    expect(Object.fromEntries(redirect.fields)).toMatchObject({ fpx_debit_auth_code: code, payment_stage: 'payment_unsuccessful' })
  })

  it('with no redirect_url the browser goes to the service status page', async () => {
    const exchangeNumber = await pay({ redirect_url: '' })
    const page = await throughTheBank(exchangeNumber, 'MB2U0227', 'approve')
    expect(page.status).toBe(303)
    expect(page.headers.get('location')).toBe(`${emulator.baseUrl}/v1/status/${exchangeNumber}?uid=${DEMO.uid}`)
  })

  it('B2B1: pending approval (99) back to the merchant, then the approver approves (00) and a second callback follows', async () => {
    const exchangeNumber = await pay({ model: 'B2B1' })
    const redirect = formOf(await (await throughTheBank(exchangeNumber, 'MBB0228', 'pending')).text(), 'redirect')
    expect(Object.fromEntries(redirect.fields)).toMatchObject({ fpx_debit_auth_code: '99', fpx_model: 'B2B1' })
    await settled(emulator, exchangeNumber, 1)
    const approvalPage = await emulator.get(`/pay/${exchangeNumber}/approval`, null)
    expect(approvalPage.status).toBe(200)
    const approved = await post(`${emulator.baseUrl}/pay/${exchangeNumber}/approval`, { decision: 'approve' })
    expect(approved.status).toBe(200)
    expect(await approved.text()).toContain('approved (00)')
    await settled(emulator, exchangeNumber, 2)
    expect(merchant.callbacks.map((callback) => callback.code)).toEqual(['99', '00'])
    expect(merchant.events.map((event) => event.state)).toEqual(['pending', 'succeeded'])
    expect((await emulator.get(`/pay/${exchangeNumber}/approval`, null)).status).toBe(409)
  })

  it('a B2C bank page offers no pending approval, and the bank chosen at the merchant skips selection', async () => {
    const exchangeNumber = await pay({ buyer_bank_code: 'PBB0233' })
    const loginHtml = await (await emulator.get(`/pay/${exchangeNumber}`, null)).text()
    expect(loginHtml).toContain('<div class="mark" data-bank="PBB0233">Public Bank</div>')
    expect(formOf(loginHtml, 'bank-login').fields).toEqual([['bank_code', 'PBB0233']])
    const html = await (await logIn(loginHtml)).text()
    expect(html).toContain('value="approve"')
    expect(html).not.toContain('value="pending"')
    expect(formOf(html, 'bank-answer').fields).toEqual([['bank_code', 'PBB0233']])
  })

  it('the log-in takes any user ID and password, but shows the page again for an empty user ID', async () => {
    const exchangeNumber = await pay()
    const loginHtml = await (await post(`${emulator.baseUrl}/pay/${exchangeNumber}/bank`, { buyer_bank_code: 'MB2U0227' })).text()
    const refused = await logIn(loginHtml, '  ')
    expect(refused.status).toBe(422)
    const again = await refused.text()
    expect(again).toContain('Enter your user ID.')
    expect(formOf(again, 'bank-login').fields).toEqual([['bank_code', 'MB2U0227']])
    const user = `<img src=x onerror=alert(1)>`
    const confirm = await (await logIn(loginHtml, user)).text()
    expect(confirm).toContain('Logged in as <strong data-user-id>&#60;img src=x onerror=alert(1)&#62;</strong>')
    expect(confirm).not.toContain(user)
    expect(emulator.state.payment(exchangeNumber)?.bank).toBeNull()
  })

  it('cancelling at the log-in is the buyer\'s cancel (1C)', async () => {
    const exchangeNumber = await pay()
    const loginHtml = await (await post(`${emulator.baseUrl}/pay/${exchangeNumber}/bank`, { buyer_bank_code: 'MB2U0227' })).text()
    const leave = formOf(loginHtml, 'bank-leave')
    const redirect = formOf(await (await post(leave.action, [...leave.fields, ['outcome', 'cancel']])).text(), 'redirect')
    expect(Object.fromEntries(redirect.fields)).toMatchObject({ fpx_debit_auth_code: '1C' })
  })

  it('a finished payment cannot be paid again through its pages', async () => {
    const exchangeNumber = await pay()
    await throughTheBank(exchangeNumber, 'MB2U0227', 'approve')
    const again = await emulator.get(`/pay/${exchangeNumber}`, null)
    expect(again.status).toBe(409)
    expect(again.headers.get('content-type')).toMatch(/^text\/html/)
    const secondAnswer = await post(`${emulator.baseUrl}/pay/${exchangeNumber}/authorize`, { outcome: 'reject', bank_code: 'MB2U0227' })
    expect(secondAnswer.status).toBe(409)
    await settled(emulator, exchangeNumber)
    expect(merchant.events.map((event) => event.state)).toEqual(['succeeded'])
  })
})
