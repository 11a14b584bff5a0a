import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import getRawBody from 'raw-body'
import { alreadyRead } from '../core/result/body.js'
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
  // body-parser 1 (Express 4) marks its work with _body; everything that reads the stream leaves it ended.
  if (spent(request)) return { ...base, consumedBy: kept.parser }
  return { ...base, readBody: (limit) => readNodeBody(request, request.headers, limit, kept.parser) }
}

/** Whether something read a request stream to its end before the receiver could. */
export function spent(stream: NodeJS.ReadableStream): boolean {
  const state = stream as { readableEnded?: boolean; _body?: unknown }
  return state.readableEnded === true || state._body === true
}

/**
 * A Node request body's bytes, up to `limit`, checked against its Content-Length when it declares one. A stream
 * something else began to read (a middleware's 'data' listener, then an asynchronous step) may still be whole (a
 * peek put back with unshift), so it is read; when it then comes out short of its length, the bytes the app's
 * `reader` took are gone: 500 body_already_parsed, never a 400 that blames the sender for a genuine callback.
 */
export async function readNodeBody(stream: NodeJS.ReadableStream, headers: IncomingHttpHeaders, limit: number, reader?: string, advice?: string): Promise<Buffer> {
  const touched = (stream as { readableDidRead?: boolean }).readableDidRead === true
  try {
    return await getRawBody(stream, { limit, length: headers['content-length'] ?? null })
  } catch (error) {
    if (touched && reader !== undefined && (error as { status?: unknown } | null)?.status === 400) throw alreadyRead(reader, advice)
    throw error
  }
}
