/*
 * A fetch-style handler (`Request` → `Response`, the console's) mounted in a Node.js framework: the framework's
 * request becomes a fetch Request and the Response goes back as status, headers and bytes. The adapters only call
 * these two, so every framework serves exactly what the fetch handler answered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readNodeBody } from './node-delivery.js'

/** A body a fetch-style handler mounted in a framework may read: its forms are small. */
export const MOUNTED_BODY_LIMIT = 64 * 1024

export interface NodeRequestParts {
  readonly request: IncomingMessage
  /** The path and query the browser asked for (Express's and Koa's originalUrl), mount prefix included. */
  readonly url: string
  /** What a body parser that ran first left: raw bytes or text, or a parsed form (an object of strings). */
  readonly parsed?: unknown
  /** The unread body, when the framework hands it on as a stream of its own (Fastify's raw parser). */
  readonly stream?: NodeJS.ReadableStream
}

function headersOf(request: IncomingMessage): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name.startsWith(':')) continue
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
  }
  return headers
}

/** A parsed form (`express.urlencoded()`, koa-bodyparser) as the urlencoded text it was. */
function formText(parsed: unknown): string | undefined {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined
  const form = new URLSearchParams()
  for (const [name, value] of Object.entries(parsed)) {
    for (const one of Array.isArray(value) ? value : [value]) if (typeof one === 'string') form.append(name, one)
  }
  return form.toString()
}

async function bodyOf(parts: NodeRequestParts): Promise<Uint8Array | string | undefined> {
  const { request, parsed, stream } = parts
  if (stream !== undefined) return readNodeBody(stream, request.headers, MOUNTED_BODY_LIMIT)
  if (parsed instanceof Uint8Array || typeof parsed === 'string') return parsed
  // body-parser 1 (Express 4) marks its work with _body; everything that reads the stream leaves it ended.
  const spent = request.readableEnded || (request as { _body?: unknown })._body === true
  if (!spent) return readNodeBody(request, request.headers, MOUNTED_BODY_LIMIT)
  return formText(parsed)
}

/** The fetch Request for a Node request. Rejects (status 413 or 400 on the error) when its body is too large or cut. */
export async function fetchRequest(parts: NodeRequestParts): Promise<Request> {
  const { request } = parts
  const method = request.method ?? 'GET'
  const encrypted = (request.socket as { encrypted?: boolean } | undefined)?.encrypted === true
  const url = new URL(parts.url, `${encrypted ? 'https' : 'http'}://${request.headers.host ?? 'localhost'}`)
  const body = method === 'GET' || method === 'HEAD' ? undefined : await bodyOf(parts)
  return new Request(url, { method, headers: headersOf(request), ...(body === undefined ? {} : { body: body as RequestInit['body'] }) })
}

/** What a Response says, ready for a framework's reply: Set-Cookie kept apart, since it may come more than once. */
export interface ResponseParts {
  readonly status: number
  readonly headers: Record<string, string>
  readonly cookies: string[]
  readonly body: Buffer
}

export async function responseParts(response: Response): Promise<ResponseParts> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  return { status: response.status, headers, cookies: response.headers.getSetCookie(), body: Buffer.from(await response.arrayBuffer()) }
}

/** Writes what a Response said to a Node response. */
export function writeResponse(response: ServerResponse, answer: ResponseParts): void {
  response.statusCode = answer.status
  for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value)
  if (answer.cookies.length > 0) response.setHeader('set-cookie', answer.cookies)
  response.end(answer.body)
}

/** A node:http request listener serving a fetch-style handler: the console's own server (`fpx-collect console`). */
export function nodeListener(handler: (request: Request) => Promise<Response>): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    fetchRequest({ request, url: request.url ?? '/' })
      .then(handler)
      .then(responseParts)
      .then((answer) => writeResponse(response, answer))
      .catch((error: unknown) => {
        const status = (error as { status?: unknown })?.status
        response.statusCode = typeof status === 'number' && status >= 400 && status < 500 ? status : 500
        response.setHeader('content-type', 'text/plain; charset=utf-8')
        response.end(response.statusCode === 500 ? 'internal error' : 'request refused')
      })
  }
}
