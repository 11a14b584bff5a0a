/*
 * The HTML that takes the buyer's browser to the service: buildPaymentForm's fields as hidden inputs of a form
 * that submits itself. Every value is escaped for a double-quoted attribute, so a buyer named
 * `"><script>…` posts exactly that name and runs nothing; hand-written `<input value="${v}">` did not.
 */
import { escapeHtml, htmlDocument } from '../core/html.js'
import type { PaymentForm } from './payments.js'

export interface PaymentFormHtmlOptions {
  /** The button shown while the page submits itself, and the one to press without JavaScript. Default 'Continue to payment'. */
  buttonText?: string
  /** The Content-Security-Policy nonce for the one inline script, when the page's policy asks for one. */
  nonce?: string
  /**
   * Only the form and its script, to put into a page of your own (served as UTF-8). Default: a whole page, which
   * you send as `text/html; charset=utf-8` with `Cache-Control: no-store` (the fields hold the Auth Token).
   */
  fragment?: boolean
  /** The whole page's title and the line above the button. Default 'Redirecting to payment…'. */
  title?: string
  /** `false`: no script; the buyer presses the button. Default true. */
  autoSubmit?: boolean
}

/** What paymentFormHtml takes: buildPaymentForm's result, or fields with nested objects (`params`) not yet flattened. */
export interface PaymentFormInput {
  readonly action: string
  readonly method?: PaymentForm['method']
  readonly fields: Readonly<Record<string, string | Readonly<Record<string, string>>>>
}

const FORM_ID = 'fpx-collect-payment-form'

/** The fields as the browser posts them: nested objects as `name[key]`, as buildPaymentForm already gives them. */
function flatten(fields: PaymentFormInput['fields']): [string, string][] {
  const entries: [string, string][] = []
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === 'string') entries.push([name, value])
    else if (typeof value === 'object' && value !== null && !Array.isArray(value))
      for (const [key, inner] of Object.entries(value)) {
        if (typeof inner !== 'string') throw new TypeError(`paymentFormHtml: field ${name}[${key}] must be a string`)
        entries.push([`${name}[${key}]`, inner])
      }
    else throw new TypeError(`paymentFormHtml: field ${name} must be a string (or an object of strings, such as params)`)
  }
  return entries
}

/**
 * An escaped form that posts `form.fields` to `form.action` and submits itself (with a button for browsers
 * without JavaScript): `res.type('html').set('cache-control', 'no-store').send(paymentFormHtml(client.buildPaymentForm(input, { exposeAuthToken: true })))`.
 */
export function paymentFormHtml(form: PaymentFormInput, options: PaymentFormHtmlOptions = {}): string {
  if (form === null || typeof form !== 'object') throw new TypeError('paymentFormHtml: pass the result of buildPaymentForm')
  if (form.method !== undefined && form.method !== 'POST') throw new TypeError('paymentFormHtml: the payment form is posted (method POST)')
  // A javascript: or data: action would run code when the form is submitted; the service is reached over http(s).
  const protocol = typeof form.action === 'string' && URL.canParse(form.action) ? new URL(form.action).protocol : ''
  if (protocol !== 'https:' && protocol !== 'http:') throw new TypeError('paymentFormHtml: action must be an absolute http(s) URL')
  const inputs = flatten(form.fields).map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
  const title = options.title ?? 'Redirecting to payment…'
  const nonce = options.nonce === undefined ? '' : ` nonce="${escapeHtml(options.nonce)}"`
  // HTMLFormElement.prototype.submit, not form.submit(): a field named "submit" would shadow the method.
  const script =
    options.autoSubmit === false ? '' : `\n<script${nonce}>HTMLFormElement.prototype.submit.call(document.getElementById('${FORM_ID}'))</script>`
  const formHtml = `<form id="${FORM_ID}" method="post" action="${escapeHtml(form.action)}" accept-charset="UTF-8">
${inputs.join('\n')}
<button type="submit">${escapeHtml(options.buttonText ?? 'Continue to payment')}</button>
</form>${script}`
  if (options.fragment === true) return formHtml
  return htmlDocument({ title, body: `<p>${escapeHtml(title)}</p>\n${formHtml}` })
}

