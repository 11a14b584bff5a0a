import { escapeHtml } from '../core/html.js'
import { ApiError, notFound } from './errors.js'
import { type Context, type Reply, type Route, readForm } from './http.js'
import { bankPagePath } from './pages.js'
import { schemePage } from './pages-layout.js'
import { mytIso, statusRecord } from './records.js'
import { pdfDocument, type PdfLine } from './pdf.js'
import type { PaymentRecord } from './state.js'

/**
 * The addresses the service puts in records and results (status_url, retry_url, receipt_url). Each carries the
 * API UID of the credential set that made the payment; a missing or different uid is answered like an unknown
 * payment (404), so the addresses cannot be used to probe for exchange numbers.
 */
function withUid(context: Context, record: PaymentRecord | undefined): PaymentRecord {
  const uid = context.url.searchParams.get('uid')
  if (record === undefined || uid === null || uid !== record.credentialUid) throw notFound('no such payment')
  return record
}

function outcomeText(record: PaymentRecord): string {
  if (record.paymentStatus) return 'Payment successful'
  if (record.bank === null) return 'Waiting for the bank'
  if (record.bank.debitAuthCode === '99') return 'Pending corporate approval'
  return 'Payment unsuccessful'
}

function statusPage(context: Context): Reply {
  const record = withUid(context, context.state.payment(context.params.exchange_number ?? ''))
  const fields = statusRecord(record, context.state.contextOf(record))
  const merchant = context.state.contextOf(record).merchant
  const bank = record.bank
  const link = (url: unknown, text: string, id: string) =>
    typeof url === 'string' ? `<p><a id="${id}" class="btn btn-secondary" href="${escapeHtml(url)}">${escapeHtml(text)}</a></p>` : ''
  const tone = record.paymentStatus ? 'ok' : record.bank === null || record.bank.debitAuthCode === '99' ? 'wait' : 'bad'
  const body = `<div class="card">
<h1 data-payment-status="${String(record.paymentStatus)}" class="outcome outcome-${tone}">${escapeHtml(outcomeText(record))}</h1>
<dl>
<dt>Merchant</dt><dd>${escapeHtml(merchant.name)}</dd>
<dt>Order</dt><dd>${escapeHtml(record.orderNumber)}</dd>
<dt>Amount</dt><dd>RM ${escapeHtml(record.transactionAmount)}</dd>
<dt>Reference</dt><dd>${escapeHtml(record.exchangeNumber)}</dd>
<dt>Created</dt><dd>${escapeHtml(String(fields.created_at))}</dd>
${bank === null ? '' : `<dt>Bank</dt><dd>${escapeHtml(bank.bankName)}</dd>
<dt>Bank reference</dt><dd>${escapeHtml(bank.transactionId)}</dd>
<dt>Bank message</dt><dd>${escapeHtml(bank.statusMessage)} (${escapeHtml(bank.debitAuthCode)})</dd>`}
</dl>
${link(fields.receipt_url, 'Download the receipt (PDF)', 'receipt')}${link(fields.retry_url, 'Try the payment again', 'retry')}
</div>`
  return { html: schemePage('Payment status', body) }
}

function failedAttempt(context: Context): PaymentRecord {
  const reference = context.params.reference ?? ''
  const record = withUid(context, context.state.paymentByReference(reference))
  const failed = record.bank !== null && !record.paymentStatus && record.bank.debitAuthCode !== '99'
  if (!failed) throw new ApiError(409, 'conflict', 'only a failed payment can be retried')
  return record
}

/** Another attempt at the same order paid since? Then retrying would charge the buyer twice. */
function alreadyPaid(context: Context, record: PaymentRecord): boolean {
  return context.state.attempts(record.orderNumber).some((payment) => payment.merchantId === record.merchantId && payment.paymentStatus)
}

/** GET shows what will be retried; only the POST makes a new attempt, so link previews and reloads create nothing. */
function retryPage(context: Context): Reply {
  const record = failedAttempt(context)
  if (alreadyPaid(context, record)) throw new ApiError(409, 'conflict', 'this order has been paid by another attempt')
  const action = `${context.url.pathname}${context.url.search}`
  const body = `<div class="card">
<h1>Try the payment again</h1>
<p>The previous attempt failed: ${escapeHtml(record.bank?.statusMessage ?? '')}.</p>
<dl>
<dt>Order</dt><dd>${escapeHtml(record.orderNumber)}</dd>
<dt>Amount</dt><dd>RM ${escapeHtml(record.transactionAmount)}</dd>
</dl>
<form id="retry" method="post" action="${escapeHtml(action)}" class="actions"><button type="submit" class="btn btn-primary">Choose a bank and pay again</button></form>
</div>`
  return { html: schemePage('Try again', body) }
}

async function retry(context: Context): Promise<Reply> {
  await readForm(context.req)
  const record = failedAttempt(context)
  if (alreadyPaid(context, record)) throw new ApiError(409, 'conflict', 'this order has been paid by another attempt')
  // The new attempt keeps the order and the merchant's addresses; the bank is chosen afresh (the last one may have been the problem).
  const attempt = context.state.addPayment({
    merchantId: record.merchantId,
    credentialUid: record.credentialUid,
    partnerUid: record.partnerUid,
    orderNumber: record.orderNumber,
    buyerName: record.buyerName,
    buyerEmail: record.buyerEmail,
    buyerPhone: record.buyerPhone,
    transactionAmount: record.transactionAmount,
    productDescription: record.productDescription,
    callbackUrl: record.callbackUrl,
    redirectUrl: record.redirectUrl,
    cancelUrl: record.cancelUrl,
    timeoutUrl: record.timeoutUrl,
    redirectPost: false,
    model: record.model,
    bankSelection: record.bankSelection,
    buyerBankCode: null,
    params: record.params,
    shippingAddress: record.shippingAddress,
    billingAddress: record.billingAddress,
    clientIp: context.clientIp,
  })
  const location = `${context.state.baseUrl}${bankPagePath(attempt.exchangeNumber)}`
  return {
    status: 303,
    html: schemePage('Continue', `<div class="card"><p><a href="${escapeHtml(location)}">Continue to bank selection</a></p></div>`),
    headers: { location, 'x-exchange-number': attempt.exchangeNumber },
  }
}

function receiptLines(context: Context, record: PaymentRecord): PdfLine[] {
  const { merchant } = context.state.contextOf(record)
  const bank = record.bank
  return [
    { text: 'Payment receipt', size: 20, bold: true },
    { text: `${merchant.name} (${merchant.coNumber})` },
    { text: '' },
    { text: `Order number: ${record.orderNumber}` },
    { text: `Amount paid: RM ${record.transactionAmount}`, bold: true },
    { text: `Description: ${record.productDescription}` },
    { text: `Paid by: ${record.buyerName} <${record.buyerEmail}>` },
    { text: `Exchange number: ${record.exchangeNumber}` },
    { text: `Merchant reference: ${record.merchantReferenceNumber}` },
    { text: `Bank: ${bank?.bankName ?? ''} (FPX ${record.model})` },
    { text: `Bank transaction id: ${bank?.transactionId ?? ''}` },
    { text: `Created: ${mytIso(new Date(record.createdAt))}` },
    { text: '' },
    { text: 'Issued by the fpx-collect emulator. Not a real payment.', size: 9 },
  ]
}

async function receipt(context: Context): Promise<Reply> {
  const file = context.params.file ?? ''
  if (!file.endsWith('.pdf')) throw notFound('receipts are at /v1/receipt/<exchange_number>.pdf')
  const record = withUid(context, context.state.payment(file.slice(0, -'.pdf'.length)))
  if (!record.paymentStatus) throw notFound('a receipt exists only for a successful payment')
  return {
    bytes: await pdfDocument(`Receipt ${record.orderNumber}`, receiptLines(context, record)),
    headers: { 'content-type': 'application/pdf', 'content-disposition': `inline; filename="receipt-${record.exchangeNumber}.pdf"` },
  }
}

export const accountRoutes: Route[] = [
  { method: 'GET', path: '/v1/status/:exchange_number', handler: statusPage },
  { method: 'GET', path: '/v1/retry/:reference', handler: retryPage },
  { method: 'POST', path: '/v1/retry/:reference', handler: retry },
  { method: 'GET', path: '/v1/receipt/:file', handler: receipt },
]
