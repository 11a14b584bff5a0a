/*
 * What stands between a request and the console: the merchant's authorize hook (no hook, no console), and for
 * actions, proof that the form was posted from the console's own page: a per-session token in the form that must
 * match the console's cookie (HttpOnly, SameSite=Strict), and the browser's Origin and Sec-Fetch-Site headers,
 * which no other site can set. Every answer carries a Content-Security-Policy that allows no outside source and no
 * script at all.
 */
import type { ConsoleSettings } from './options.js'

export const CSRF_COOKIE = 'fpx_console_csrf'
export const CSRF_FIELD = 'csrf'

/** Why a request is turned away: a status and a sentence for the page. */
export interface Refusal {
  readonly status: number
  readonly title: string
  readonly message: string
}

export const NO_AUTHORIZE: Refusal = {
  status: 403,
  title: 'Console not enabled',
  message:
    'This console is mounted without an authorize hook, so it refuses every request: it shows buyers’ names and ' +
    'e-mail addresses and can run payment handlers again. Give the mount an authorize function, such as ' +
    'fpxConsole(receiver, { authorize: (request) => isOperator(request) ? operatorName : false }) ' +
    '(docs/operations.md, "The console").',
}

const NOT_ALLOWED: Refusal = { status: 403, title: 'Not allowed', message: 'authorize refused this request: sign in as an operator of this shop.' }

/** 32 random bytes as base64url: session and form tokens. */
export function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** The request's cookies by name (the first of a name wins, as browsers send the most specific path first). */
export function cookiesOf(request: Request): Map<string, string> {
  const found = new Map<string, string>()
  for (const pair of (request.headers.get('cookie') ?? '').split(';')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    const name = pair.slice(0, at).trim()
    if (!found.has(name)) found.set(name, pair.slice(at + 1).trim())
  }
  return found
}

/** Whether `request` may use the console, and as whom; a Refusal when not (or when the hook threw). */
export async function authorized(settings: ConsoleSettings, request: Request): Promise<{ readonly operator: string } | Refusal> {
  if (settings.authorize === undefined) return NO_AUTHORIZE
  let answer
  try {
    answer = await settings.authorize(request)
  } catch {
    return { status: 500, title: 'Authorization failed', message: 'the authorize hook threw, so the request was refused; see the application’s own log.' }
  }
  if (answer === true) return { operator: 'an operator' }
  if (typeof answer === 'string' && answer !== '') return { operator: answer }
  if (typeof answer === 'object' && answer !== null && typeof answer.name === 'string' && answer.name !== '') return { operator: answer.name }
  return NOT_ALLOWED
}

/** The host the browser addressed: the Host header, else the URL's. */
function hostOf(request: Request): string {
  return request.headers.get('host') ?? new URL(request.url).host
}

/** Why a state-changing request is not the console's own form, or undefined when it is. */
export function crossSite(request: Request, form: URLSearchParams, cookie: string | undefined): string | undefined {
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin') return `the request came from another site (Sec-Fetch-Site: ${site})`
  const origin = request.headers.get('origin')
  if (origin !== null) {
    let host: string | undefined
    try {
      host = origin === 'null' ? undefined : new URL(origin).host
    } catch {
      host = undefined
    }
    if (host !== hostOf(request)) return 'the request’s Origin is not this console’s'
  }
  const token = form.get(CSRF_FIELD)
  if (cookie === undefined || token === null || !sameText(cookie, token)) return 'the form’s token does not match this browser’s console session (reload the page and try again)'
  return undefined
}

/** Compares without stopping at the first difference. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/** The console's session cookie (the form token's pair): this path only, never readable by a script, never cross-site. */
export function csrfCookie(settings: ConsoleSettings, url: URL, token: string): string {
  const secure = settings.secureCookies ?? url.protocol === 'https:'
  // A mount path may hold a raw `;` (Express passes a parameter's as it came): written as it is, it would end the
  // Path and add attributes of the requester's choosing. Anything but printable ASCII other than `;` is escaped. Escaped, the path no longer matches, and the console's
  // forms are refused under that mount, never the cookie widened.
  const path = settings.basePath === '' ? '/' : settings.basePath.replace(/[^!-:<-~]/g, (character) => encodeURIComponent(character))
  return `${CSRF_COOKIE}=${token}; Path=${path}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
}

/**
 * Headers of every answer: no outside source, no script, no framing, nothing cached, no referrer sent to another
 * site. (`same-origin`, not `no-referrer`: under no-referrer a browser sends `Origin: null` with the console's own
 * forms, and the Origin check could not tell them from another site's.)
 */
export function securityHeaders(styleNonce: string): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; style-src 'nonce-${styleNonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  }
}
