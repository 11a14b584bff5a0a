import { EXIT, type Io } from './common.js'

/**
 * What `fpx-collect trigger` makes of the app's answer. A callback route is posted to server to server and
 * acknowledges with 2xx; a redirect route answers the buyer's browser, and a 3xx with a Location (to the shop's
 * page) is its success. A callback route answering 3xx is the trap: a route behind a log-in page redirects every
 * POST and never handles the result, while the service (and the emulator, outside strict mode) may count it
 * delivered.
 */
export type RouteKind = 'callback' | 'redirect'

export interface RouteAnswer {
  readonly status: number
  readonly statusText: string
  readonly location: string | null
  readonly body: string
}

/** Where the result came from: made up and signed by trigger itself, or made and sent by an emulator. */
export type ResultOrigin = { readonly kind: 'made-up' } | { readonly kind: 'emulator'; readonly baseUrl: string }

const MAX_SHOWN_BODY = 4000
const CONFIRMATION_CODES = ['confirmation_pending', 'confirmation_unavailable'] as const

/**
 * The receiver's refusal code, from its JSON body `{ "error": { "code" } }` (or a flat `code`). The emulator's
 * delivery log keeps only the start of a body, so a cut-off JSON text is read for its first code.
 */
function refusalCode(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown }; code?: unknown } | null
    const code = parsed?.error?.code ?? parsed?.code
    return typeof code === 'string' ? code : undefined
  } catch {
    return /"code"\s*:\s*"([a-z_]+)"/.exec(body)?.[1]
  }
}

/** Why a receiver that confirms results over the API answered 503, and what to do. */
export function confirmationAdvice(code: string, origin: ResultOrigin): string {
  const confirms = "The receiver confirms every result over the service's API (a search by exchange_number) before any handler runs"
  if (origin.kind === 'emulator') {
    return code === 'confirmation_pending'
      ? `${confirms}, and the API it asked does not know this payment, although the emulator made it. Point the app's base URL at ${origin.baseUrl} (and its credentials at that emulator's merchant), then trigger again.`
      : `${confirms}, and it could not reach that API. Point the app's base URL at ${origin.baseUrl} and check its credentials, then trigger again.`
  }
  const cause =
    code === 'confirmation_pending'
      ? 'This result was made up and signed by fpx-collect trigger, so no API knows it, and the receiver answers 503 for the service to retry.'
      : 'It could not reach the API (check its base URL and credentials); and a result made up by fpx-collect trigger is known to no API anyway.'
  return (
    `${confirms}. ${cause} To send a result the API knows, run the emulator (fpx-collect emulator), point the app's ` +
    'base URL at it, and add --emulator <its URL>: the emulator then makes the payment and posts its result itself. ' +
    'A receiver that checks signatures only takes made-up results as they are.'
  )
}

/** Prints the answer (status, Location, body) and any warning; returns the exit code. */
export function reportAnswer(io: Io, answer: RouteAnswer, route: RouteKind, origin: ResultOrigin): number {
  const redirected = answer.status >= 300 && answer.status < 400
  const where = redirected ? `Location: ${answer.location ?? '(none)'} (not followed)\n` : ''
  const body = answer.body.length > MAX_SHOWN_BODY ? `${answer.body.slice(0, MAX_SHOWN_BODY)}…` : answer.body
  io.out(`${answer.status} ${answer.statusText}\n${where}${body}\n`)
  if (answer.status >= 200 && answer.status < 300) return EXIT.ok
  if (redirected && route === 'redirect') {
    if (answer.location !== null) return EXIT.ok
    io.err('fpx-collect trigger: warning: the redirect route answered a redirect without a Location: the buyer would be stuck on a blank page.\n')
    return EXIT.negative
  }
  if (redirected) {
    io.err(
      `fpx-collect trigger: warning: the callback route answered ${answer.status}, a redirect${answer.location === null ? '' : ` to ${answer.location}`}. ` +
        'The service posts its callback server to server and expects 2xx: a 3xx usually means the route sits behind a log-in ' +
        'redirect (or another middleware that redirects) and never handled the result, although the service may count it ' +
        'delivered. If this URL is your redirect_url route (the buyer\'s browser), pass --redirect.\n',
    )
    return EXIT.negative
  }
  const code = answer.status === 503 ? refusalCode(answer.body) : undefined
  if (code !== undefined && (CONFIRMATION_CODES as readonly string[]).includes(code)) io.err(`fpx-collect trigger: ${code}: ${confirmationAdvice(code, origin)}\n`)
  return EXIT.negative
}
