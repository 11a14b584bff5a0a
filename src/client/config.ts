import { isChecksumToken } from '../core/checksum-token.js'
import { type Logger, type LoggerOption, safeLogger } from '../core/logger.js'
import type { PaymentBookSource } from './booking.js'

/**
 * The spec says sandbox and production each have their own {base_url} ending in /api, but does not give them.
 * These are placeholders: pass `environment: { baseUrl }` with the addresses from the service's dashboard, or
 * replace these constants in a fork once the addresses are known.
 */
export const ENVIRONMENTS = {
  sandbox: 'https://sandbox.fpx-collect.invalid/api',
  production: 'https://www.fpx-collect.invalid/api',
} as const

export type EnvironmentName = keyof typeof ENVIRONMENTS

export interface ClientOptions {
  environment: EnvironmentName | { baseUrl: string }
  /** API UID: the Basic-auth username and the `uid` request field. */
  uid: string
  /** Auth Token: the Basic-auth password and the `token` request field. */
  authToken: string
  /** Checksum Token: the key of the payment request checksum. */
  checksumToken: string
  /** For partners creating payments on behalf of a merchant: sent as `partner_uid` unless an input overrides it. */
  partnerUid?: string
  /** Per HTTP attempt. Default 15 000 ms. */
  timeoutMs?: number
  /** Extra attempts of a GET after a network error, a time-out, 429 or 5xx. Default 2. */
  maxRetries?: number
  /** First back-off wait in ms, doubled on every retry, with full jitter. Default 250. */
  retryDelayMs?: number
  /** The fetch to use (a proxy agent, a test double of the network). Default: the platform's fetch. */
  fetch?: typeof fetch
  /** Retries and discarded bank entries are warned about. Default: warnings on the console; `false` silences. */
  logger?: LoggerOption
  /**
   * Record every payment this client creates in the payment book: pass the receiver (or its store). Then
   * buildPaymentForm's form carries a `recorded` promise, and results are checked against what was asked, and
   * swept when they never come (docs/payment-lifecycle.md).
   */
  book?: PaymentBookSource
}

export interface ResolvedConfig {
  readonly baseUrl: string
  readonly uid: string
  readonly authToken: string
  readonly checksumToken: string
  readonly partnerUid: string | undefined
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly retryDelayMs: number
  readonly fetch: typeof fetch
  readonly logger: Logger
}

/** A token of NUL characters only is the empty HMAC key in disguise (core/checksum-token.ts). */
function checksumTokenOf(value: unknown): string {
  if (!isChecksumToken(value)) throw new TypeError('createClient: checksumToken must be a non-empty string (and not NUL characters only)')
  return value
}

function nonEmpty(value: unknown, name: string): string {
  // Only the option's name goes into the message, never the value: it may be a secret.
  if (typeof value !== 'string' || value === '') throw new TypeError(`createClient: ${name} must be a non-empty string`)
  return value
}

function wholeNumber(value: number | undefined, fallback: number, name: string, min: number): number {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value < min) throw new TypeError(`createClient: ${name} must be an integer ≥ ${min}`)
  return value
}

export function resolveConfig(options: ClientOptions): ResolvedConfig {
  const environment = options.environment
  let baseUrl: string
  if (typeof environment === 'string') {
    if (!(environment in ENVIRONMENTS)) throw new TypeError('createClient: environment must be sandbox, production or { baseUrl }')
    baseUrl = ENVIRONMENTS[environment]
  } else {
    baseUrl = nonEmpty(environment?.baseUrl, 'environment.baseUrl')
    const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') throw new TypeError('createClient: environment.baseUrl must be an http(s) URL')
    // The client sends the credentials itself; a URL holding them would show up in every error and log line.
    if (url.username !== '' || url.password !== '')
      throw new TypeError('createClient: environment.baseUrl must not contain a user name or password (give uid and authToken instead)')
  }
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    uid: nonEmpty(options.uid, 'uid'),
    authToken: nonEmpty(options.authToken, 'authToken'),
    checksumToken: checksumTokenOf(options.checksumToken),
    partnerUid: options.partnerUid === undefined ? undefined : nonEmpty(options.partnerUid, 'partnerUid'),
    timeoutMs: wholeNumber(options.timeoutMs, 15_000, 'timeoutMs', 1),
    maxRetries: wholeNumber(options.maxRetries, 2, 'maxRetries', 0),
    retryDelayMs: wholeNumber(options.retryDelayMs, 250, 'retryDelayMs', 0),
    // Called as a plain function: Workers refuse a fetch called as another object's method (Illegal invocation).
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    logger: safeLogger(options.logger),
  }
}
