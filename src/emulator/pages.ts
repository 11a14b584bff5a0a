import { escapeHtml, htmlPage } from '../receiver/html.js'
import { encodeForm } from '../testing.js'
import type { FieldInput } from '../core/values.js'
import type { Bank } from './config.js'
import type { PaymentRecord } from './state.js'

/**
 * The hosted pages, server-rendered with every value escaped. Each page works without scripts; a script only
 * submits a form or follows the time-out on the buyer's behalf, and a button does the same by hand.
 */
export function bankPagePath(exchangeNumber: string): string {
  return `/pay/${encodeURIComponent(exchangeNumber)}`
}

const e = escapeHtml

function summary(record: PaymentRecord): string {
  return `<dl>
<dt>Amount</dt><dd>RM ${e(record.transactionAmount)}</dd>
<dt>Order</dt><dd>${e(record.orderNumber)}</dd>
<dt>For</dt><dd>${e(record.productDescription)}</dd>
<dt>Reference</dt><dd data-exchange-number="${e(record.exchangeNumber)}">${e(record.exchangeNumber)}</dd>
</dl>`
}

/** The answer to payment creation: a summary and the way on to bank selection, taken at once with redirect_post. */
export function paymentCreatedPage(record: PaymentRecord, bankPageUrl: string): string {
  const form = `<form id="continue" method="get" action="${e(bankPageUrl)}">
<button type="submit">Continue to bank selection</button>
</form>`
  const body = `<h1>Pay RM ${e(record.transactionAmount)}</h1>
${summary(record)}
${form}
<p><a href="${e(bankPageUrl)}">Choose your bank</a></p>`
  const autoSubmit = record.redirectPost ? `\n<script>document.getElementById('continue').submit()</script>` : ''
  return htmlPage('Online banking payment', body + autoSubmit)
}

export interface SelectionPageOptions {
  /** Where the chosen bank is posted. */
  readonly action: string
  /** The emulator's own cancel address (it forwards to cancel_url), when cancel_url is set. */
  readonly cancelAction: string | null
  /** The time-out, when timeout_url is set: milliseconds left and the address that forwards to timeout_url. */
  readonly timeout: { readonly remainingMs: number; readonly url: string } | null
}

function bankChoice(record: PaymentRecord, banks: readonly Bank[]): string {
  if (record.bankSelection === 'grid') {
    const buttons = banks.map((bank) => {
      const offline = bank.status === 'online' ? '' : ' disabled'
      const note = bank.status === 'online' ? '' : ' <small>(offline)</small>'
      return `<button type="submit" name="buyer_bank_code" value="${e(bank.code)}" class="bank"${offline}>${e(bank.name)}${note}</button>`
    })
    return `<div class="bank-grid" data-layout="grid">\n${buttons.join('\n')}\n</div>`
  }
  const options = banks.map((bank) => {
    const offline = bank.status === 'online' ? '' : ' disabled'
    const note = bank.status === 'online' ? '' : ' (offline)'
    return `<option value="${e(bank.code)}"${offline}>${e(bank.name)}${note}</option>`
  })
  return `<label for="bank">Bank</label>
<select id="bank" name="buyer_bank_code" required data-layout="dropdown">
<option value="" selected disabled>Select bank</option>
${options.join('\n')}
</select>
<button type="submit">Proceed</button>`
}

/** Bank selection: a dropdown or a grid per fpx_bank_selection, cancel when cancel_url is set, time-out when timeout_url is. */
export function bankSelectionPage(record: PaymentRecord, banks: readonly Bank[], options: SelectionPageOptions): string {
  const style = `<style>.bank-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:.5rem}
.bank{padding:1rem .5rem}</style>`
  const cancel =
    options.cancelAction === null
      ? ''
      : `<form method="post" action="${e(options.cancelAction)}"><button type="submit" name="cancel" value="1">Cancel</button></form>`
  const timeout = options.timeout
  // The URL reaches the script through an escaped attribute, never inside the script's text. Without scripts the
  // refresh still leaves the page; it counts whole seconds, so it is only the fallback.
  const timer =
    timeout === null
      ? ''
      : `<p id="timeout" data-timeout-ms="${timeout.remainingMs}" data-url="${e(timeout.url)}">This page times out in ${Math.ceil(timeout.remainingMs / 1000)} seconds.</p>
<noscript><meta http-equiv="refresh" content="${Math.ceil(timeout.remainingMs / 1000)};url=${e(timeout.url)}"></noscript>
<script>(function(){var t=document.getElementById('timeout');setTimeout(function(){location.replace(t.dataset.url)},Number(t.dataset.timeoutMs))})()</script>`
  const body = `${style}
<h1>Choose your bank</h1>
${summary(record)}
<p>Online banking, ${record.model === 'B2B1' ? 'corporate (B2B1)' : 'retail (B2C)'}.</p>
<form id="select-bank" method="post" action="${e(options.action)}">
${bankChoice(record, banks)}
</form>
${cancel}
${timer}`
  return htmlPage('Choose your bank', body)
}

const OUTCOME_BUTTONS = [
  ['approve', 'Approve'],
  ['reject', 'Reject'],
  ['cancel', 'Cancel (buyer)'],
] as const

/** The simulated bank: the tester picks the bank's answer. */
export function simulatedBankPage(record: PaymentRecord, bank: Bank, action: string): string {
  const buttons = OUTCOME_BUTTONS.map(([outcome, label]) => `<button type="submit" name="outcome" value="${outcome}">${label}</button>`)
  if (record.model === 'B2B1')
    buttons.push('<button type="submit" name="outcome" value="pending">Submit for corporate approval (99)</button>')
  const body = `<h1>${e(bank.name)}</h1>
<p>Simulated bank. Choose how the bank answers this payment.</p>
${summary(record)}
<form id="bank-answer" method="post" action="${e(action)}">
<input type="hidden" name="bank_code" value="${e(bank.code)}">
${buttons.join('\n')}
</form>`
  return htmlPage(`${bank.name}: simulated bank`, body)
}

/** The buyer's browser POSTs the signed fields to redirect_url (spec, Events): a self-submitting form. */
export function redirectPage(redirectUrl: string, fields: Record<string, FieldInput>): string {
  const inputs = [...new URLSearchParams(encodeForm(fields))].map(
    ([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`,
  )
  const body = `<h1>Returning to the merchant</h1>
<form id="redirect" method="post" action="${e(redirectUrl)}">
${inputs.join('\n')}
<button type="submit">Continue to the merchant</button>
</form>
<script>document.getElementById('redirect').submit()</script>`
  return htmlPage('Returning to the merchant', body)
}

/** The redirect-lost fault: the browser never gets back to the merchant, as when a buyer closes the tab. */
export function redirectLostPage(record: PaymentRecord): string {
  return htmlPage(
    'Connection lost',
    `<h1>Connection lost</h1>
<p data-fault="redirect_lost">The way back to the merchant was lost (fault injected). The result of payment
${e(record.exchangeNumber)} reaches the merchant only through its callback.</p>`,
  )
}

/** The corporate approver's page for a B2B1 payment pending approval (99). */
export function approvalPage(record: PaymentRecord, action: string): string {
  const body = `<h1>Corporate approval</h1>
<p>Payment pending the authorizer's approval (fpx_debit_auth_code 99).</p>
${summary(record)}
<form id="approval" method="post" action="${e(action)}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="reject">Reject</button>
</form>`
  return htmlPage('Corporate approval', body)
}

export function messagePage(title: string, text: string, status?: number): string {
  const code = status === undefined ? '' : ` data-status="${status}"`
  return htmlPage(title, `<h1>${e(title)}</h1>\n<p${code}>${e(text)}</p>`)
}
