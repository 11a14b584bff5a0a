import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A real HTTP server on 127.0.0.1 that writes the request it got back into its answer, as misconfigured gateways,
 * debugging proxies and some error pages do. The first path segment picks the form of the echo, so one server
 * serves every case: a client's baseUrl is `${origin}/${mode}/api`.
 */
export const ECHO_MODES = [
  'json-field',
  'json-nested',
  'error-message',
  'plain-text',
  'header-echo',
  'url-encoded',
  'basic-base64',
  'php-escaped',
  'go-escaped',
  'unicode-escaped',
  'ok-unicode-escaped',
  'status-text',
  'unprocessable',
  'ok-json',
  'ok-text',
  'redirect',
  'html-split',
  'html-references',
  'ok-link-split',
  'ok-link-references',
  'reset',
  'hang',
  'hang-body',
] as const
export type EchoMode = (typeof ECHO_MODES)[number]

/** Modes with no HTTP answer: the client sees a network error or a time-out. */
export const UNANSWERED: ReadonlySet<EchoMode> = new Set(['reset', 'hang', 'hang-body'])

interface Heard {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  /** What the request carried: the Basic-auth header and the body's token, checksum_token and uid. */
  authorization: string
  password: string
  form: Record<string, string>
}

async function hear(request: IncomingMessage): Promise<Heard> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks).toString('utf8')
  const authorization = request.headers.authorization ?? ''
  const decoded = Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString('utf8')
  const form = Object.fromEntries(new URLSearchParams(body))
  return { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body, authorization, password: decoded.slice(decoded.indexOf(':') + 1), form }
}

/** Whatever secret the request carried: the body's token (payment creation) or the Basic-auth password. */
const tokenOf = (heard: Heard): string => heard.form.token ?? heard.password
const rawRequest = (heard: Heard): string =>
  `${heard.method} ${heard.url} HTTP/1.1\r\n${Object.entries(heard.headers).map(([name, value]) => `${name}: ${String(value)}`).join('\r\n')}\r\n\r\n${heard.body}`

/** JSON with every character of every string written as \\uXXXX: valid, and the token appears in no spelling but its own. */
const unicodeJson = (value: unknown): string =>
  JSON.stringify(value).replace(/"(?:[^"\\]|\\.)*"/g, (quoted) => {
    const text = JSON.parse(quoted) as string
    return `"${[...text].map((character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
  })

/** Text with a tag or a line break after every third character: a page shows it whole, and so may a log line. */
const scattered = (text: string): string => text.replace(/.../g, (three, at: number) => `${three}${['<br>', '</b>', '\n', '<wbr>', '\r\n'][(at / 3) % 5]}`)

/** Names of HTML character references for characters the tokens, URL encoding and base64 use. */
export const HTML_NAMES: Readonly<Record<string, string>> = { '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos', '/': 'sol', '+': 'plus', '=': 'equals', '%': 'percnt', '?': 'quest', ':': 'colon' }

/** Text written as HTML character references: named where there is a name, else by turns decimal (zero-padded), hex (upper case) and as is. */
const referenced = (text: string): string =>
  [...text]
    .map((character, at) => {
      const code = character.charCodeAt(0)
      return HTML_NAMES[character] !== undefined ? `&${HTML_NAMES[character]};` : [`&#00${code};`, `&#X${code.toString(16).toUpperCase()};`, character][at % 3]
    })
    .join('')

/** Every byte as a percent escape: the address means the same, and no encoder writes it so. */
const percentEscaped = (text: string): string => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')

function answer(mode: EchoMode, heard: Heard, response: ServerResponse): void {
  const json = (status: number, value: unknown, text = JSON.stringify(value)): void => void response.writeHead(status, { 'content-type': 'application/json' }).end(text)
  const html = (status: number, page: string): void => void response.writeHead(status, { 'content-type': 'text/html' }).end(page)
  const token = tokenOf(heard)
  switch (mode) {
    case 'json-field':
      return json(500, { error: 'internal error', code: 'echo', token, checksum_token: heard.form.checksum_token, authorization: heard.authorization })
    case 'json-nested':
      return json(400, {
        error: 'bad request',
        code: 'echo',
        request: { headers: heard.headers, form: heard.form, raw: heard.body, trail: [[{ seen: [token, heard.form.checksum_token?.toUpperCase()] }]] },
        [`token:${token}`]: 'a key made of the token',
      })
    case 'error-message':
      return json(401, { error: `token ${token} is invalid or expired (got ${heard.authorization} and ${heard.body})`, code: 'echo' })
    case 'plain-text':
      return void response.writeHead(502, { 'content-type': 'text/plain' }).end(`Bad gateway while forwarding:\n${rawRequest(heard)}`)
    case 'header-echo':
      response.writeHead(403, { 'content-type': 'text/plain', 'x-echo-authorization': heard.authorization, 'x-echo-token': encodeURIComponent(token) })
      return void response.end(`Authorization: ${heard.authorization}\r\nX-Token: ${token}\r\nX-Checksum-Token: ${heard.form.checksum_token ?? ''}`)
    case 'url-encoded':
      response.writeHead(400, { 'content-type': 'application/x-www-form-urlencoded' })
      return void response.end(`${heard.body}&authorization=${encodeURIComponent(heard.authorization)}&echo=${encodeURIComponent(JSON.stringify(heard.form))}`)
    case 'basic-base64':
      return json(401, { error: `invalid credentials: ${heard.authorization}`, code: 'echo', received: heard.authorization.replace(/^Basic /, '') })
    case 'php-escaped':
      // PHP's json_encode writes / as \/, so base64 and URLs echoed by a PHP service do not appear verbatim.
      return json(500, null, JSON.stringify({ error: 'echo', code: 'echo', request: heard.authorization, form: heard.body }).replace(/\//g, '\\/'))
    case 'go-escaped':
      // Go's encoding/json (and Rails) write <, > and & as \u003c, \u003e and \u0026, for HTML safety.
      return json(500, null, JSON.stringify({ error: 'echo', code: 'echo', token, form: heard.body }).replace(/[<>&]/g, (character) => `\\u00${character.charCodeAt(0).toString(16)}`))
    case 'unicode-escaped':
      return json(500, null, unicodeJson({ error: 'internal error', code: 'echo', token, authorization: heard.authorization, form: heard.form }))
    case 'ok-unicode-escaped':
      return json(200, null, unicodeJson({ echo: heard.form, authorization: heard.authorization, token }))
    case 'status-text':
      response.writeHead(500, `Invalid token ${token} ${heard.authorization}`.replace(/[^\t\x20-\x7e]/g, '?'), { 'content-type': 'application/json' })
      return void response.end('{}')
    case 'unprocessable':
      return json(422, { error: 'invalid', fields: { token: `${token} is not valid`, [token]: `was ${heard.authorization}` } })
    case 'ok-json':
      return json(200, { echo: heard.form, authorization: heard.authorization, token })
    case 'ok-text':
      return void response.writeHead(200, { 'content-type': 'text/html' }).end(`<pre>${rawRequest(heard)}</pre>`)
    case 'redirect':
      response.writeHead(302, { location: `/pay?token=${encodeURIComponent(token)}&auth=${encodeURIComponent(heard.authorization)}`, 'x-exchange-number': token })
      return void response.end()
    case 'html-split':
      return html(500, `<h1>Bad token</h1><p>token ${scattered(token)}</p><p>checksum token ${scattered(heard.form.checksum_token ?? '')}</p><pre>${scattered(heard.authorization)}</pre>`)
    case 'html-references':
      return html(500, `<h1>Bad token</h1><p>token ${referenced(token)}</p><p>checksum token ${referenced(heard.form.checksum_token ?? '')}</p><pre>${referenced(heard.authorization)}</pre>`)
    case 'ok-link-split': {
      // A browser, and the WHATWG URL parser, drop every tab and line break in an address.
      const link = encodeURIComponent(token).replace(/.{4}/, '$&\n').replace(/.{12}/, '$&\t')
      // Last and with no `>` after it, so that an excerpt of the page keeps it: a space in the token is a line break here.
      return html(200, `<p>Continue to your bank.</p><a href="/pay?token=${link}&amp;auth=${percentEscaped(heard.authorization)}">continue</a>\ntoken ${token.replace(/ /g, '\n')}`)
    }
    case 'ok-link-references':
      return html(200, `<p>Continue to your bank.</p><a href="/pay?token=${referenced(encodeURIComponent(token))}">continue</a> <p>token ${referenced(token)}</p>`)
    case 'reset':
      return void response.socket?.destroy()
    case 'hang':
      return
    case 'hang-body':
      response.writeHead(200, { 'content-type': 'application/json' })
      return void response.write(`{"echo":${JSON.stringify(token)}`)
  }
}

export interface EchoServer {
  baseUrl(mode: EchoMode): string
  close(): Promise<void>
}

export async function echoServer(): Promise<EchoServer> {
  const server = createServer((request, response) => {
    void hear(request).then((heard) => answer(heard.url.split('/')[1] as EchoMode, heard, response))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    baseUrl: (mode) => `${origin}/${mode}/api`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
