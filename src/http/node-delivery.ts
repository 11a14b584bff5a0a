import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import getRawBody from 'raw-body'
import type { Delivery, DeliveryKind } from '../receiver/receiver.js'

/** What a framework kept of a request's body, if anything. */
export interface KeptBody {
  /** A raw copy a body parser kept (`req.rawBody`, `ctx.request.rawBody`) or a Buffer body (`express.raw()`). */
  raw: unknown
  /** The framework's usual body parsers, named in the error when one spent the stream and kept nothing raw. */
  parser: string
}

function isRawBody(value: unknown): value is Uint8Array | string {
  return value instanceof Uint8Array || typeof value === 'string'
}

/**
 * The delivery of a Node.js request: the raw bytes a parser kept, or a reader for the untouched stream
 * (raw-body, limited to the receiver's maxBodyBytes), or, when the stream is spent and nothing raw was kept,
 * the name of the parser that spent it so the receiver can say how to fix the mounting order.
 */
/** The raw query string of a request target (`/path?a=1` → `a=1`), undecoded, as the receiver wants it. */
export function rawQuery(url: string): string {
  const queryStart = url.indexOf('?')
  return queryStart < 0 ? '' : url.slice(queryStart + 1)
}

export function nodeDelivery(kind: DeliveryKind, request: IncomingMessage, kept: KeptBody, url = request.url ?? ''): Delivery {
  const base = {
    kind,
    contentType: request.headers['content-type'] ?? null,
    contentEncoding: request.headers['content-encoding'] ?? null,
    query: rawQuery(url),
  }
  if (isRawBody(kept.raw)) return { ...base, body: kept.raw }
  // body-parser 1 (Express 4) marks its work with _body; everything that reads the stream leaves it ended, and
  // something that read part of it (a middleware's 'data' listener, then an asynchronous step) leaves readableDidRead:
  // the bytes it saw are gone, which is the app's doing, never a body the sender cut short.
  if (spent(request)) return { ...base, consumedBy: kept.parser }
  return { ...base, readBody: (limit) => readNodeBody(request, request.headers, limit) }
}

/** Whether something read a request stream (all of it, or part) before the receiver could. */
export function spent(stream: NodeJS.ReadableStream): boolean {
  const state = stream as { readableEnded?: boolean; readableDidRead?: boolean; _body?: unknown }
  return state.readableEnded === true || state._body === true || state.readableDidRead === true
}

/** A Node request body's bytes, up to `limit`, checked against its Content-Length when it declares one. */
export function readNodeBody(stream: NodeJS.ReadableStream, headers: IncomingHttpHeaders, limit: number): Promise<Buffer> {
  return getRawBody(stream, { limit, length: headers['content-length'] ?? null })
}
