import { inspect } from 'node:util'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, FpxError, type FpxClient, reconcile, type ReconcileOptions } from '../../src/client/index.js'
import { ECHO_MODES, type EchoMode, echoServer, type EchoServer, HTML_NAMES, UNANSWERED } from './echo-server.js'
import { memoryLogger, paymentInput } from './helpers.js'

/**
 * No error the client throws keeps the Auth Token or the Checksum Token in any property, whatever the upstream
 * echoes: every client method that reaches the API, against every form of echo, read the three ways errors get
 * logged (util.inspect with hidden properties, JSON.stringify, pino's err serializer through a real logger).
 */
const SPEC_SHAPED = { uid: 'a1b2c3d4-0000-4000-8000-00000000e5c0', authToken: 'EchoAuthToken0000001', checksumToken: 'fedcba98'.repeat(8) }
// Characters that URL, form, JSON, HTML and base64 encodings each write differently.
const ODD = { uid: 'odd-uid-1', authToken: `Tok+en/Wi=th &"<%'?`, checksumToken: `Check/sum+Token=&"<%'` }

/** Every way the secrets can be written: the test looks for each, ignoring case. */
function writtenForms(credentials: typeof SPEC_SHAPED): string[] {
  const forms = new Set<string>()
  const basic = Buffer.from(`${credentials.uid}:${credentials.authToken}`).toString('base64')
  for (const secret of [credentials.authToken, credentials.checksumToken, basic, Buffer.from(basic, 'base64').toString('base64url')])
    for (const form of [
      secret,
      encodeURIComponent(secret),
      new URLSearchParams({ s: secret }).toString().slice(2),
      JSON.stringify(secret).slice(1, -1),
      JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'),
      JSON.stringify(secret).slice(1, -1).replace(/[<>&]/g, (character) => `\\u00${character.charCodeAt(0).toString(16)}`),
      [...secret].map((character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      inspect(secret).slice(1, -1),
    ])
      forms.add(form)
  return [...forms]
}

const METHODS: Array<[string, (client: FpxClient) => Promise<unknown>]> = [
  ['validateCredentials', (client) => client.validateCredentials()],
  ['publicBanks', (client) => client.publicBanks('b2c')],
  ['partnerBanks', (client) => client.partnerBanks('b2b1')],
  ['createPayment', (client) => client.createPayment(paymentInput())],
  ['createPaymentSession', (client) => client.createPaymentSession({ transaction_amount: '1.00' })],
  ['paymentStatus', (client) => client.paymentStatus('ORD-1')],
  ['paymentStatusByReference', (client) => client.paymentStatusByReference('REF-1')],
  ['transactions', (client) => client.transactions({ payment_status: 'all' })],
  [
    'transactions.all',
    async (client) => {
      for await (const record of client.transactions.all()) return record
    },
  ],
  ['searchTransactions', (client) => client.searchTransactions('order_number', 'ORD-1')],
  [
    'reconcile',
    (client) => {
      const receiver = { handleTrusted: () => Promise.reject(new Error('not reached: the list fails first')) } as unknown as ReconcileOptions['receiver']
      return reconcile({ client, receiver, from: '2026-03-01', to: '2026-03-02' })
    },
  ],
]

const TIMEOUT_MS = 150

/** What the message must still say, so a redacted error stays useful. */
const SAYS: Record<EchoMode, RegExp> = {
  'json-field': /answered 500 \(echo\): internal error/,
  'json-nested': /answered 400 \(echo\): bad request/,
  'error-message': /answered 401 \(echo\): token .*is invalid or expired/,
  'plain-text': /answered 502: Bad gateway while forwarding: (GET|POST) \//,
  'header-echo': /answered 403: Authorization:/,
  'url-encoded': /answered 400: /,
  'basic-base64': /answered 401 \(echo\): invalid credentials/,
  'php-escaped': /answered 500 \(echo\): echo/,
  'go-escaped': /answered 500 \(echo\): echo/,
  'unicode-escaped': /answered 500 \(echo\): internal error/,
  'ok-unicode-escaped': /answered 200 (with an unexpected shape|with a page that has no next address)/,
  'status-text': /answered 500/,
  unprocessable: /answered 422: token .*is not valid/,
  'ok-json': /answered 200 (with an unexpected shape|with a page that has no next address)/,
  'ok-text': /answered 200 with (a body that is not JSON|a page that has no next address)/,
  redirect: /answered 302|next address that carries a credential/,
  'html-split': /answered 500: Bad token token/,
  'html-references': /answered 500: Bad token token/,
  'ok-link-split': /answered 200 with (a body that is not JSON: Continue to your bank|a next address that carries a credential)/,
  'ok-link-references': /answered 200 with (a body that is not JSON: Continue to your bank|a next address that carries a credential)/,
  reset: /the request failed/,
  hang: new RegExp(`no answer within ${TIMEOUT_MS} ms`),
  'hang-body': new RegExp(`no answer within ${TIMEOUT_MS} ms`),
}

/** The error as each way of logging it prints it. */
function printed(error: unknown): Record<string, string> {
  const lines: string[] = []
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) })
  logger.error({ err: error }, 'the API call failed')
  return {
    inspect: inspect(error, { depth: Infinity, showHidden: true }),
    json: JSON.stringify(error),
    serializer: JSON.stringify(pino.stdSerializers.err(error as Error)),
    logger: lines.join(''),
  }
}

/** Every string an error holds, property names included, in any property of it or of what it holds (body, causes). */
function stringsOf(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value === 'string') return [value]
  if (typeof value !== 'object' || value === null || seen.has(value)) return []
  seen.add(value)
  return Reflect.ownKeys(value).flatMap((key) => [...(typeof key === 'string' ? [key] : []), ...stringsOf((value as Record<PropertyKey, unknown>)[key], seen)])
}

const NAMED = Object.fromEntries(Object.entries(HTML_NAMES).map(([character, name]) => [name, character]))

/** Text as a browser shows it, or as someone reading a log puts it together: no tags, no line breaks, references decoded. */
function asRead(text: string): string {
  return text
    .replace(/<[^<>]*>|[\r\n]/g, '')
    .replace(/&#x([0-9a-f]+);?|&#(\d+);?|&([a-z]+);/gi, (whole, hex?: string, decimal?: string, name?: string) =>
      hex !== undefined ? String.fromCodePoint(parseInt(hex, 16)) : decimal !== undefined ? String.fromCodePoint(Number(decimal)) : (NAMED[name?.toLowerCase() ?? ''] ?? whole),
    )
}

function leaksIn(error: unknown, forms: readonly string[]): string[] {
  const views = { ...printed(error), read: stringsOf(error).map(asRead).join('\n') }
  return Object.entries(views).flatMap(([view, text]) => forms.filter((form) => text.toLowerCase().includes(form.toLowerCase())).map((form) => `${view}: ${form}`))
}

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('expected the call to fail')
}

let echo: EchoServer
beforeAll(async () => {
  echo = await echoServer()
})
afterAll(() => echo.close())

describe.each([
  ['spec-shaped tokens', SPEC_SHAPED],
  ['tokens with characters every encoding changes', ODD],
])('with %s', (_label, credentials) => {
  const forms = writtenForms(credentials)

  it.each(ECHO_MODES)('keeps them out of every error of every method when the upstream echoes the request: %s', async (mode) => {
    const { lines, logger } = memoryLogger()
    const client = createClient({ environment: { baseUrl: echo.baseUrl(mode) }, ...credentials, timeoutMs: TIMEOUT_MS, maxRetries: 1, retryDelayMs: 1, logger })
    for (const [method, call] of METHODS) {
      const error = await failure(() => call(client))
      expect(error, `${method} ${mode}`).toBeInstanceOf(FpxError)
      expect(leaksIn(error, forms), `${method} ${mode}`).toEqual([])
      expect((error as Error).message, `${method} ${mode}`).toMatch(SAYS[mode])
      if (!UNANSWERED.has(mode)) expect((error as { status?: number }).status, `${method} ${mode}`).toBeTypeOf('number')
      // Where the upstream repeated a secret in its message, the message keeps the rest of it.
      if (method !== 'publicBanks' && (mode === 'error-message' || mode === 'unprocessable')) expect((error as Error).message).toContain('token [redacted] is')
    }
    expect(forms.filter((form) => lines.join('\n').toLowerCase().includes(form.toLowerCase()))).toEqual([])
  })

  it('keeps them out of a network error whose cause carries the request, as some fetch wrappers do', async () => {
    const carrying: typeof fetch = (input, init) => {
      const request = { url: String(input), headers: init?.headers, body: String(init?.body ?? '') }
      const socket = Object.assign(new Error(`socket hang up while sending ${request.body}`), { code: 'ECONNRESET', request, config: { auth: credentials } })
      const aggregate = new AggregateError([socket, new Error(JSON.stringify(request.headers))], 'connect failed')
      return Promise.reject(Object.assign(new TypeError('fetch failed', { cause: aggregate }), { init, seen: [request, 'x'.repeat(10)] }))
    }
    const client = createClient({ environment: { baseUrl: echo.baseUrl('json-field') }, ...credentials, maxRetries: 0, fetch: carrying, logger: false })
    for (const [method, call] of METHODS) {
      const error = await failure(() => call(client))
      expect(leaksIn(error, forms), method).toEqual([])
      // What is safe stays: the codes and messages of the cause chain, for whoever reads the log.
      expect(inspect(error, { depth: Infinity, showHidden: true }), method).toMatch(/connect failed[\s\S]*socket hang up while sending[\s\S]*ECONNRESET/)
    }
  })
})

describe('a payment answer that would take the buyer to an address carrying a credential', () => {
  it('is an error, not a nextUrl', async () => {
    const client = createClient({ environment: { baseUrl: echo.baseUrl('redirect') }, ...SPEC_SHAPED, logger: false })
    const error = await failure(() => client.createPayment(paymentInput()))
    expect(error).toMatchObject({ status: 302 })
    expect((error as Error).message).toMatch(/next address that carries a credential/)
  })

  // The page's link is decoded (references, then the URL parser's dropping of tabs and line breaks) after the
  // page was redacted: the address is checked as it would leave.
  it.each([
    ['split by a tab and a line break, with the Basic header percent-escaped', 'ok-link-split'],
    ['written as character references', 'ok-link-references'],
  ] as const)('is an error when the link holds the token %s', async (_label, mode) => {
    for (const credentials of [SPEC_SHAPED, ODD]) {
      const client = createClient({ environment: { baseUrl: echo.baseUrl(mode) }, ...credentials, logger: false })
      const error = await failure(() => client.createPayment(paymentInput()))
      expect(error).toMatchObject({ status: 200 })
      expect((error as Error).message).toMatch(/next address that carries a credential/)
      expect(leaksIn(error, writtenForms(credentials))).toEqual([])
    }
  })
})

describe('a base URL with a user name or password', () => {
  it('is refused at createClient, without repeating it', () => {
    const baseUrl = `http://${SPEC_SHAPED.uid}:${SPEC_SHAPED.authToken}@127.0.0.1:9/api`
    const create = () => createClient({ environment: { baseUrl }, ...SPEC_SHAPED })
    expect(create).toThrow(/environment\.baseUrl must not contain a user name or password/)
    expect(leaksIn(failureOf(create), writtenForms(SPEC_SHAPED))).toEqual([])
  })
})

function failureOf(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}
