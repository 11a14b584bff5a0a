import { escapeHtml, htmlPage } from '../html.js'
import type { PaymentRecord } from './state.js'

/**
 * The hosted pages. For now only the page payment creation answers with, and a stand-in for the bank-selection
 * page it leads to; the real bank-selection and bank pages come later at the same address.
 */
export function bankPagePath(exchangeNumber: string): string {
  return `/pay/${encodeURIComponent(exchangeNumber)}`
}

/** The answer to payment creation: a summary and the way on to bank selection, taken at once with redirect_post. */
export function paymentCreatedPage(record: PaymentRecord, bankPageUrl: string): string {
  const form = `<form id="continue" method="get" action="${escapeHtml(bankPageUrl)}">
<button type="submit">Continue to bank selection</button>
</form>`
  const body = `<h1>Pay RM ${escapeHtml(record.transactionAmount)}</h1>
<dl>
<dt>Order</dt><dd>${escapeHtml(record.orderNumber)}</dd>
<dt>For</dt><dd>${escapeHtml(record.productDescription)}</dd>
<dt>Reference</dt><dd data-exchange-number="${escapeHtml(record.exchangeNumber)}">${escapeHtml(record.exchangeNumber)}</dd>
</dl>
${form}
<p><a href="${escapeHtml(bankPageUrl)}">Choose your bank</a></p>`
  const autoSubmit = record.redirectPost ? `\n<script>document.getElementById('continue').submit()</script>` : ''
  return htmlPage('Online banking payment', body + autoSubmit)
}

export function bankPagePlaceholder(record: PaymentRecord): string {
  return htmlPage(
    'Choose your bank',
    `<h1>Choose your bank</h1>
<p>Payment ${escapeHtml(record.exchangeNumber)} of RM ${escapeHtml(record.transactionAmount)} (${escapeHtml(record.model)}).</p>
<p>The emulator's bank pages are not built yet; finish the payment through the control API:
POST /__emulator/payments/${escapeHtml(record.exchangeNumber)}/complete.</p>`,
  )
}
