/** Shared by the adapter tests: a recording receiver, signed and forged bodies, a plain HTTP client, servers. */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type RequestListener } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { afterEach, expect } from 'vitest'
import { createReceiver, type FieldInput, type PaymentEvent, type Receiver, type RedirectOptions } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

export const TOKEN = 'ab'.repeat(32)
export const OTHER_TOKEN = 'cd'.repeat(32)
export const FORM = 'application/x-www-form-urlencoded'
/** Small, so oversize bodies stay small too and fit in socket buffers. */
export const MAX_BODY_BYTES = 4096

type Fields = Record<string, FieldInput>

export interface Recorded {
  receiver: Receiver
  /** Every handler run, in order. */
  runs: PaymentEvent[]
}

export function recordedReceiver(checksumToken = TOKEN): Recorded {
  const receiver = createReceiver({ signatureOnly: true, checksumToken, maxBodyBytes: MAX_BODY_BYTES })
  const runs: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void runs.push(event))
  return { receiver, runs }
}

export const failedFields = (): Fields =>
  samplePaymentFields({ payment_status: 'false', fpx_debit_auth_code: '1C', fpx_status: 'false', payment_stage: 'payment_unsuccessful' })
export const pendingFields = (): Fields => samplePaymentFields({ fpx_model: 'B2B1', payment_status: 'false', fpx_debit_auth_code: '99' })

export function signed(fields: Fields = samplePaymentFields(), options: { format?: 'form' | 'json'; token?: string } = {}) {
  return signCallback(fields, options.token ?? TOKEN, { format: options.format ?? 'form' })
}

/** A signed form body with one field changed afterwards, as a forger without the token would do. */
export function tampered(body: string, name = 'transaction_amount', value = '1.00'): string {
  const params = new URLSearchParams(body)
  expect(params.get(name)).not.toBe(value)
  params.set(name, value)
  return params.toString()
}

/** A form body with the checksum intact and more than MAX_BODY_BYTES of padding. */
export function oversizeBody(): string {
  return `${signed().body}&padding=${'x'.repeat(MAX_BODY_BYTES)}`
}

export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  text: string
}

export interface PostOptions {
  body?: string
  contentType?: string
  /** Send the body in pieces with Transfer-Encoding: chunked and no Content-Length. */
  chunked?: boolean
}

/** A POST over a fresh connection; resolves once the whole response has arrived. */
export function post(base: string, path: string, options: PostOptions = {}): Promise<Reply> {
  const { body = '', contentType, chunked = false } = options
  const headers: Record<string, string> = {}
  if (contentType !== undefined) headers['content-type'] = contentType
  if (!chunked) headers['content-length'] = String(Buffer.byteLength(body))
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(path, base), { method: 'POST', headers, agent: false }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }))
      response.on('error', reject)
    })
    // A server may answer 413 and close before the last piece is written; the answer is what counts.
    outgoing.on('error', reject)
    if (chunked) {
      const pieceSize = 1024
      for (let at = 0; at < body.length; at += pieceSize) outgoing.write(body.slice(at, at + pieceSize))
      outgoing.end()
    } else {
      outgoing.end(body)
    }
  })
}

export function errorOf(reply: Reply): { code: string; message: string } {
  expect(reply.headers['content-type']).toMatch(/^application\/json/)
  return (JSON.parse(reply.text) as { error: { code: string; message: string } }).error
}

export interface Started {
  /** `http://127.0.0.1:<port>` */
  url: string
  close(): Promise<void>
}

/** The framework's request object type differs per adapter; the contract only passes options through. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRedirectOptions = RedirectOptions<any>

export type Open = (receiver: Receiver, redirect: AnyRedirectOptions) => Promise<Started>

/** Starts apps for one test and closes them after it. */
export function appsFor(open: Open): (redirect?: AnyRedirectOptions) => Promise<Recorded & { url: string }> {
  const started: Started[] = []
  afterEach(async () => {
    await Promise.all(started.splice(0).map((app) => app.close()))
  })
  return async (redirect = {}) => {
    const recorded = recordedReceiver()
    const app = await open(recorded.receiver, redirect)
    started.push(app)
    return { ...recorded, url: app.url }
  }
}

/** Serves a Node request listener (an Express app, `koa.callback()`, a bridge) on 127.0.0.1 at a free port. */
export async function serve(listener: RequestListener): Promise<Started> {
  const server = createServer(listener)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  }
}

const requireFromHere = createRequire(import.meta.url)

/** The installed version of a package or npm alias, so the matrix shows (and checks) which major it ran. */
export function installedVersion(name: string): string {
  return (requireFromHere(`${name}/package.json`) as { version: string }).version
}
