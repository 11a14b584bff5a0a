/*
 * The operator's console as one fetch handler (`Request` → `Response`): every framework mount (adapters/*) and
 * the `fpx-collect console` command serve exactly this. It routes under its base path, lets nobody in without the
 * merchant's authorize hook, checks every action's form token and origin, and renders the pages.
 */
import { lookUpNow, retry, type ActionResult } from './actions.js'
import { authorized, CSRF_COOKIE, cookiesOf, crossSite, csrfCookie, randomToken, type Refusal, securityHeaders } from './guard.js'
import { inboxFilter, inboxPage } from './inbox-page.js'
import { type Page, renderPage } from './layout.js'
import { html, type Html } from './markup.js'
import { type ConsoleOptions, type ConsoleSettings, consoleSettings } from './options.js'
import { overviewPage } from './overview-page.js'
import { paymentPage } from './payment-page.js'
import { paymentsPage } from './payments-page.js'
import { refusalsPage } from './refusals-page.js'
import { type ConsoleReceiver, type ConsoleSource, receiverSource } from './source.js'
import { View } from './view.js'

export type ConsoleHandler = (request: Request) => Promise<Response>

/** The most a console form may post: its forms hold a few short fields. */
const MAX_FORM_BYTES = 16 * 1024
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/

/** What an action did, said on the page it returns to (never text from the request: only these, and a count). */
function doneNotice(params: URLSearchParams): Html | undefined {
  const done = params.get('done')
  if (done === 'lookup') return html`<p class="notice good" role="status">Looked up now: the newest step of the life below says what the status API showed.</p>`
  if (done !== 'retry') return undefined
  const count = Number.parseInt(params.get('count') ?? '0', 10) || 0
  return count === 0
    ? html`<p class="notice" role="status">Nothing was retried: no entry matched, or a worker holds it right now.</p>`
    : html`<p class="notice good" role="status">${count} inbox ${count === 1 ? 'entry' : 'entries'} made due now; the workers run ${count === 1 ? 'it' : 'them'} at once.</p>`
}

async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > MAX_FORM_BYTES) return undefined
  const text = await request.text()
  return text.length > MAX_FORM_BYTES ? undefined : new URLSearchParams(text)
}

async function get(route: string, params: URLSearchParams, view: View, source: ConsoleSource): Promise<Page | { location: string }> {
  switch (route) {
    case '/':
      return overviewPage(view, source, params)
    case '/payments':
      return paymentsPage(view, source, params)
    case '/payment': {
      const order = params.get('order') ?? ''
      const exchange = params.get('exchange') ?? ''
      const uid = params.get('uid') ?? ''
      if (order === '' && exchange === '') return { status: 400, title: 'Which payment?', body: html`<h1>Which payment?</h1><p>Give ?order= or ?exchange=.</p>` }
      return paymentPage(view, source, { ...(order === '' ? { exchangeNumber: exchange } : { orderNumber: order }), ...(uid === '' ? {} : { uid }) }, doneNotice(params))
    }
    case '/inbox':
      return inboxPage(view, source, inboxFilter(params), doneNotice(params))
    case '/refusals':
      return refusalsPage(view, source)
    default:
      return { status: 404, title: 'Not found', body: html`<h1>Not found</h1><p><a href="${view.link('/')}">The overview</a></p>` }
  }
}

function post(route: string, form: URLSearchParams, view: View, source: ConsoleSource): Promise<ActionResult> | undefined {
  if (route === '/payment/lookup') return lookUpNow(view, source, form)
  if (route === '/inbox/retry') return retry(view, source, form)
  return undefined
}

const refusalPage = (refusal: Refusal): Page => ({ status: refusal.status, title: refusal.title, body: html`<h1>${refusal.title}</h1><p>${refusal.message}</p>` })

/** The console over a source (a receiver's, or a store's for the command line). */
export function consoleHandler(source: ConsoleSource, options: ConsoleOptions | ConsoleSettings = {}): ConsoleHandler {
  const settings = 'offsetMinutes' in options ? options : consoleSettings(options)
  return async (request) => {
    const url = new URL(request.url)
    const nonce = randomToken().slice(0, 22)
    const headers = new Headers({ ...securityHeaders(nonce), 'content-type': 'text/html; charset=utf-8' })
    const answer = (page: Page, view?: View, search?: string) =>
      new Response(request.method === 'HEAD' ? null : renderPage(settings.title, view, page, nonce, search), { status: page.status ?? 200, headers })
    const redirect = (location: string) => {
      headers.set('location', location)
      return new Response(null, { status: 303, headers })
    }

    const route = url.pathname.startsWith(settings.basePath) ? url.pathname.slice(settings.basePath.length) || '/' : undefined
    if (route === undefined || !route.startsWith('/')) return answer({ status: 404, title: 'Not found', body: html`<h1>Not found</h1>` })
    const admitted = await authorized(settings, request)
    if ('status' in admitted) return answer(refusalPage(admitted))

    let token = cookiesOf(request).get(CSRF_COOKIE)
    const hadToken = token !== undefined && TOKEN_PATTERN.test(token)
    if (!hadToken) {
      token = randomToken()
      headers.append('set-cookie', csrfCookie(settings, url, token))
    }
    const view = new View(settings.basePath, settings.offsetMinutes, admitted.operator, token as string, new Date())
    try {
      if (request.method === 'GET' || request.method === 'HEAD') {
        const page = await get(route, url.searchParams, view, source)
        if ('location' in page) return redirect(page.location)
        return answer(page, view, route === '/payments' ? (url.searchParams.get('q') ?? '') : '')
      }
      if (request.method !== 'POST') {
        headers.set('allow', 'GET, HEAD, POST')
        return answer({ status: 405, title: 'Method not allowed', body: html`<h1>Method not allowed</h1>` }, view)
      }
      const form = await readForm(request)
      if (form === undefined) return answer({ status: 413, title: 'Too large', body: html`<h1>Form too large</h1>` }, view)
      const why = crossSite(request, form, hadToken ? token : undefined)
      if (why !== undefined)
        return answer({ status: 403, title: 'Refused', body: html`<h1>Refused: not a form of this console</h1><p>${why}. Nothing was changed.</p>` }, view)
      const acting = post(route, form, view, source)
      if (acting === undefined) return answer({ status: 404, title: 'Not found', body: html`<h1>No such action</h1>` }, view)
      const result = await acting
      if ('location' in result) return redirect(result.location)
      return answer({ status: result.status, title: 'Not done', body: html`<h1>Not done</h1><p>${result.message}</p>` }, view)
    } catch (error) {
      return answer({ status: 500, title: 'Error', body: html`<h1>Something failed</h1><p class="notice bad">${source.describe(error)}</p>` }, view)
    }
  }
}

/** The console of a receiver: what `fpxConsole` mounts in each framework. */
export function createConsole(receiver: ConsoleReceiver, options: ConsoleOptions = {}): ConsoleHandler {
  if (typeof receiver?.timeline !== 'function' || typeof receiver.operator !== 'object')
    throw new TypeError('createConsole needs the receiver (createReceiver(...))')
  return consoleHandler(receiverSource(receiver), options)
}
