import { escapeHtml } from '../core/html.js'
import { encodeForm } from '../core/result/form-encode.js'
import type { FieldInput } from '../core/values.js'
import type { Bank } from './config.js'
import { bankBrand, monogram, schemePage, steps } from './pages-layout.js'
import type { PaymentRecord } from './state.js'

/**
 * The hosted pages, server-rendered with every value escaped. Each page works without scripts; a script only
 * submits a form or follows the time-out on the buyer's behalf, and a button does the same by hand.
 */
export function bankPagePath(exchangeNumber: string): string {
  return `/pay/${encodeURIComponent(exchangeNumber)}`
}

const e = escapeHtml

/**
 * Who is paid and how much, then the payment's details: the head of every page about one payment. The amount is
 * left out where the page's heading already says it.
 */
export function summary(record: PaymentRecord, payee: string, showAmount = true): string {
  const amount = showAmount ? `<div class="amount" data-amount>RM ${e(record.transactionAmount)}</div>` : ''
  return `<div class="payee"><div><div class="note">Pay to</div><div class="payee-name" data-payee>${e(payee)}</div></div>${amount}</div>
<dl>
<dt>Order</dt><dd>${e(record.orderNumber)}</dd>
<dt>For</dt><dd>${e(record.productDescription)}</dd>
<dt>Reference</dt><dd data-exchange-number="${e(record.exchangeNumber)}">${e(record.exchangeNumber)}</dd>
</dl>`
}

/** The answer to payment creation: a summary and the way on to bank selection, taken at once with redirect_post. */
export function paymentCreatedPage(record: PaymentRecord, payee: string, bankPageUrl: string): string {
  const form = `<form id="continue" method="get" action="${e(bankPageUrl)}" class="actions">
<button type="submit" class="btn btn-primary">Continue to bank selection</button>
</form>`
  const body = `<div class="card">
<h1>Pay RM ${e(record.transactionAmount)}</h1>
${summary(record, payee, false)}
<p class="note">You pay from your own bank account through FPX online banking. Next, choose your bank.</p>
${form}
</div>`
  const autoSubmit = record.redirectPost ? `\n<script>document.getElementById('continue').submit()</script>` : ''
  return schemePage('FPX online banking payment', body + autoSubmit)
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
      const brand = bankBrand(bank.code)
      const offline = bank.status === 'online' ? '' : ' disabled'
      const note = bank.status === 'online' ? '' : '<span class="offline">Offline</span>'
      return `<button type="submit" name="buyer_bank_code" value="${e(bank.code)}" class="bank" style="--bank:${brand.colour};--bank-ink:${brand.ink}"${offline}><span class="monogram" aria-hidden="true">${e(monogram(bank.name))}</span><span>${e(bank.name)}${note}</span></button>`
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
<div class="actions"><button type="submit" class="btn btn-primary">Proceed</button></div>`
}

/** Bank selection: a dropdown or a grid per fpx_bank_selection, cancel when cancel_url is set, time-out when timeout_url is. */
export function bankSelectionPage(record: PaymentRecord, payee: string, banks: readonly Bank[], options: SelectionPageOptions): string {
  const cancel =
    options.cancelAction === null
      ? ''
      : `<form method="post" action="${e(options.cancelAction)}" class="actions"><button type="submit" name="cancel" value="1" class="btn btn-secondary">Cancel</button></form>`
  const timeout = options.timeout
  // The URL reaches the script through an escaped attribute, never inside the script's text. Without scripts the
  // refresh still leaves the page; it counts whole seconds, so it is only the fallback.
  const timer =
    timeout === null
      ? ''
      : `<p id="timeout" class="notice" data-timeout-ms="${timeout.remainingMs}" data-url="${e(timeout.url)}">This page times out in ${Math.ceil(timeout.remainingMs / 1000)} seconds.</p>
<noscript><meta http-equiv="refresh" content="${Math.ceil(timeout.remainingMs / 1000)};url=${e(timeout.url)}"></noscript>
<script>(function(){var t=document.getElementById('timeout');setTimeout(function(){location.replace(t.dataset.url)},Number(t.dataset.timeoutMs))})()</script>`
  const body = `${steps(0)}
<div class="card">
${summary(record, payee)}
<h1>Choose your bank</h1>
<p class="note">Online banking, ${record.model === 'B2B1' ? 'corporate (B2B1)' : 'retail (B2C)'}. You log in to your bank next.</p>
<form id="select-bank" method="post" action="${e(options.action)}">
${bankChoice(record, banks)}
</form>
${cancel}
${timer}
</div>`
  return schemePage('Choose your bank', body)
}

/** How long the processing page shows before the browser goes back to the merchant, as the real pages pause. */
export const PROCESSING_MS = 1000

function outcomeOf(fields: Record<string, FieldInput>): { text: string; tone: 'ok' | 'bad' | 'wait' } {
  const code = String(fields.fpx_debit_auth_code ?? '')
  if (code === '00') return { text: 'Payment approved', tone: 'ok' }
  if (code === '99') return { text: 'Pending corporate approval', tone: 'wait' }
  const message = fields.fpx_status_message
  return { text: `Payment unsuccessful${typeof message === 'string' && message !== '' ? `: ${message}` : ''}`, tone: 'bad' }
}

/**
 * Processing: the bank has answered; the buyer's browser POSTs the signed fields to redirect_url (spec, Events)
 * by a form that submits itself after a short pause, or at once by its button.
 */
export function redirectPage(record: PaymentRecord, payee: string, redirectUrl: string, fields: Record<string, FieldInput>): string {
  const inputs = [...new URLSearchParams(encodeForm(fields))].map(
    ([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`,
  )
  const outcome = outcomeOf(fields)
  const bank = typeof fields.fpx_bank === 'string' ? fields.fpx_bank : ''
  const body = `${steps(3)}
<div class="card center">
<div class="spinner" role="progressbar" aria-label="Processing"></div>
<h1>Processing your payment</h1>
<p class="outcome outcome-${outcome.tone}" data-outcome="${e(String(fields.fpx_debit_auth_code ?? ''))}">${e(outcome.text)}${bank === '' ? '' : ` (${e(bank)})`}</p>
<p class="note">Returning you to ${e(payee)}. Please do not close this window or press back.</p>
<form id="redirect" method="post" action="${e(redirectUrl)}" data-delay-ms="${PROCESSING_MS}">
${inputs.join('\n')}
<div class="actions"><button type="submit" class="btn btn-primary">Continue to the merchant</button></div>
</form>
</div>
<div class="card">${summary(record, payee)}</div>
<script>(function(){var f=document.getElementById('redirect');setTimeout(function(){f.submit()},Number(f.dataset.delayMs))})()</script>`
  return schemePage('Processing your payment', body)
}

/** The redirect-lost fault: the browser never gets back to the merchant, as when a buyer closes the tab. */
export function redirectLostPage(record: PaymentRecord): string {
  return schemePage(
    'Connection lost',
    `<div class="card">
<h1>Connection lost</h1>
<p data-fault="redirect_lost">The way back to the merchant was lost (fault injected). The result of payment
${e(record.exchangeNumber)} reaches the merchant only through its callback.</p>
</div>`,
  )
}

export function messagePage(title: string, text: string, status?: number): string {
  const code = status === undefined ? '' : ` data-status="${status}"`
  return schemePage(title, `<div class="card">\n<h1>${e(title)}</h1>\n<p${code}>${e(text)}</p>\n</div>`)
}
