/** The examples' pages. Every value that reaches the HTML goes through escapeHtml, buyer input above all. */
import { type Bank, type PaymentForm, paymentFormHtml } from 'fpx-collect/client'
import type { Order } from './shop.js'

export interface Page {
  status: number
  headers: Record<string, string>
  html: string
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
}

// The payment page carries the Auth Token and every page shows buyer data: none of them belongs in a cache.
const HEADERS = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }

function page(title: string, body: string, status = 200): Page {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Kedai Contoh</title>
<style>
body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}
label{display:block;margin-top:.75rem}input,select{width:100%;padding:.4rem;box-sizing:border-box}
.problem{color:#b00020}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem;border-bottom:1px solid #ddd}
nav a{margin-right:1rem}button{margin-top:1rem;padding:.5rem 1rem}
</style>
</head>
<body>
<nav><a href="/">Checkout</a><a href="/orders">Orders</a></nav>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`
  return { status, headers: { ...HEADERS }, html }
}

export interface CheckoutValues {
  name: string
  email: string
  phone: string
  amount: string
  product: string
  /** The bank the buyer picked here, sent as buyer_bank_code; '' leaves the choice to the service's bank page. */
  bank: string
}

/** The service's B2C bank list, or why it could not be read: the checkout still works without it. */
export type BankChoice = { readonly banks: readonly Bank[] } | { readonly unavailable: string }

const SAMPLE: CheckoutValues = {
  name: 'Nur Aisyah binti Ahmad',
  email: 'aisyah@example.com',
  phone: '+60123456789',
  amount: '100.20',
  product: 'Batik scarf, hand-drawn',
  bank: '',
}

function bankField(choice: BankChoice, selected: string, problem: string | undefined): string {
  const note = problem === undefined ? '' : ` <span class="problem">${escapeHtml(problem)}</span>`
  if ('unavailable' in choice)
    return `<p>Bank${note}<br>The list of banks could not be loaded (${escapeHtml(choice.unavailable)}); you will choose your bank on the payment page.</p>`
  // Offline banks are listed but cannot be picked, so the buyer sees why their bank is missing from the choice.
  const options = choice.banks.map((bank) => {
    const attributes = `${bank.online ? '' : ' disabled'}${bank.code === selected ? ' selected' : ''}`
    return `<option value="${escapeHtml(bank.code)}"${attributes}>${escapeHtml(bank.name)}${bank.online ? '' : ' (offline)'}</option>`
  })
  return `<label>Bank${note}<select name="bank">
<option value="">Let me choose at the bank selection page</option>
${options.join('\n')}
</select></label>`
}

/** The form, filled with a sample order so trying the example takes one click; with the problems on a retry. */
export function checkoutPage(
  banks: BankChoice,
  values: CheckoutValues = SAMPLE,
  problems: Partial<Record<keyof CheckoutValues, string>> = {},
): Page {
  const input = (name: Exclude<keyof CheckoutValues, 'bank'>, label: string, type = 'text') => {
    const problem = problems[name]
    const note = problem === undefined ? '' : ` <span class="problem">${escapeHtml(problem)}</span>`
    return `<label>${escapeHtml(label)}${note}<input type="${type}" name="${name}" value="${escapeHtml(values[name])}" required></label>`
  }
  const body = `<form method="post" action="/checkout">
${input('product', 'Product')}
${input('amount', 'Amount (RM)')}
${input('name', 'Full name')}
${input('email', 'E-mail', 'email')}
${input('phone', 'Phone (international format)', 'tel')}
${bankField(banks, values.bank, problems.bank)}
<button type="submit">Pay with FPX online banking</button>
</form>`
  return page('Checkout', body, Object.keys(problems).length > 0 ? 400 : 200)
}

/**
 * The browser-form way (paymentCreation 'browser-form'): the payment request goes from the buyer's browser to
 * the service, which shows the bank selection. The form is paymentFormHtml's: every field escaped (the buyer's
 * name is theirs to choose), posted at once, with a button when scripts are off. It holds the Auth Token.
 */
export function paymentRedirectPage(form: PaymentForm): Page {
  const body = `<p>Taking you to online banking to pay for order ${escapeHtml(form.fields.order_number ?? '')}…</p>
${paymentFormHtml(form, { fragment: true })}`
  return page('Redirecting to payment', body)
}

/** The server way: the shop created the payment, and the buyer's browser follows this 303 to the service's page. */
export function toPaymentPage(nextUrl: string, orderNumber: string): Page {
  const body = `<p>Taking you to online banking to pay for order ${escapeHtml(orderNumber)}: <a href="${escapeHtml(nextUrl)}">continue</a>.</p>`
  const redirect = page('Redirecting to payment', body, 303)
  return { ...redirect, headers: { ...redirect.headers, location: nextUrl } }
}

/** The service did not take the payment; the buyer may try again, and the order keeps why. */
export function paymentNotStartedPage(orderNumber: string): Page {
  const body = `<p>The payment for order ${escapeHtml(orderNumber)} could not be started, and no money was taken.</p>
<p><a href="/">Back to the checkout</a></p>`
  return page('Payment not started', body, 502)
}

function describe(order: Order): string {
  return order.note === null ? order.state : `${order.state}: ${order.note}`
}

export function ordersPage(orders: readonly Order[]): Page {
  if (orders.length === 0) return page('Orders', '<p>No orders yet. <a href="/">Place one.</a></p>')
  const rows = orders
    .map((order) => {
      const link = `/orders/${encodeURIComponent(order.orderNumber)}`
      const cells = [order.buyer.name, `RM ${order.amount}`, order.product, describe(order)].map((cell) => `<td>${escapeHtml(cell)}</td>`)
      return `<tr><td><a href="${escapeHtml(link)}">${escapeHtml(order.orderNumber)}</a></td>${cells.join('')}</tr>`
    })
    .join('\n')
  return page('Orders', `<table>\n<tr><th>Order</th><th>Buyer</th><th>Amount</th><th>Product</th><th>State</th></tr>\n${rows}\n</table>`)
}

const MESSAGES: Record<Order['state'], string> = {
  'awaiting payment': 'We have not received the payment result yet. This page shows it once it arrives.',
  'awaiting approval': 'Your corporate account must approve the payment; we will confirm the order once it does.',
  paid: 'Thank you, your payment was received.',
  failed: 'The payment did not go through and no money was taken. You may place the order again.',
  'needs review': 'We received a payment that does not match the order; our staff will contact you.',
}

export function orderPage(order: Order | undefined): Page {
  if (order === undefined) return page('Order not found', '<p>There is no such order. <a href="/orders">All orders</a></p>', 404)
  const rows: [string, string][] = [
    ['Order', order.orderNumber],
    ['Product', order.product],
    ['Amount', `RM ${order.amount}`],
    ['Buyer', `${order.buyer.name} <${order.buyer.email}>`],
    ['State', describe(order)],
  ]
  if (order.exchangeNumber !== null) rows.push(['Reference', order.exchangeNumber])
  const list = rows.map(([term, value]) => `<tr><th>${escapeHtml(term)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n')
  return page(`Order ${order.orderNumber}`, `<p>${escapeHtml(MESSAGES[order.state])}</p>\n<table>\n${list}\n</table>`)
}
