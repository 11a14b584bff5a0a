import type { IncomingHttpHeaders } from 'node:http'
import { bodyTimeoutError } from '../core/result/body.js'

/** An error as raw-body makes it: `status` and `statusCode`, which the receiver maps to its refusals (413, 400, 500). */
function httpError(status: number, message: string, type: string): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: status < 500, type })
}

/**
 * A request body's bytes, at most `limit` of them, checked against its Content-Length, within `timeoutMs`
 * (then a 408 error): what raw-body and `withinTime` do together, with the same errors, for an adapter whose
 * framework hands over a callback (Fastify's content-type parser). Raw-body's promise, the race against a timer's
 * promise and its `finally` were five promises and a closure per delivery for what one callback does here.
 *
 * Like raw-body: a declared length over the limit is refused unread; the stream is paused once refused; a stream
 * closed before its end only stops being read (the timer still answers). Like `withinTime`: the read that lost to
 * the timer is left to end with the connection (its chunks are dropped).
 */
export function readBodyWithin(
  stream: NodeJS.ReadableStream,
  headers: IncomingHttpHeaders,
  limit: number,
  timeoutMs: number,
  callback: (error: Error | null, body?: Buffer) => void,
): void {
  const declared = headers['content-length']
  const parsed = declared === undefined ? Number.NaN : Number.parseInt(declared, 10)
  const length = Number.isNaN(parsed) ? null : parsed
  if (length !== null && length > limit) return callback(httpError(413, 'request entity too large', 'entity.too.large'))
  const state = (stream as { _readableState?: { encoding?: unknown; decoder?: unknown } })._readableState
  if ((stream as { _decoder?: unknown })._decoder || state?.encoding || state?.decoder)
    return callback(httpError(500, 'stream encoding should not be set', 'stream.encoding.set'))
  if ((stream as { readable?: boolean }).readable === false) return callback(httpError(500, 'stream is not readable', 'stream.not.readable'))

  let complete = false
  let received = 0
  const chunks: Buffer[] = []
  const timer = setTimeout(() => {
    if (complete) return
    complete = true
    callback(bodyTimeoutError())
  }, timeoutMs)
  timer.unref()

  const cleanup = (): void => {
    stream.removeListener('aborted', onAborted)
    stream.removeListener('data', onData)
    stream.removeListener('end', onEnd)
    stream.removeListener('error', onEnd)
    stream.removeListener('close', cleanup)
  }
  const finish = (error: Error | null, body?: Buffer): void => {
    if (complete) return
    complete = true
    clearTimeout(timer)
    cleanup()
    if (error !== null) {
      stream.unpipe()
      stream.pause()
    }
    callback(error, body)
  }
  function onAborted(): void {
    finish(httpError(400, 'request aborted', 'request.aborted'))
  }
  function onData(chunk: Buffer | string): void {
    if (complete) return
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    received += bytes.length
    if (received > limit) finish(httpError(413, 'request entity too large', 'entity.too.large'))
    else chunks.push(bytes)
  }
  function onEnd(error?: Error): void {
    if (error !== undefined && error !== null) return finish(error)
    if (length !== null && received !== length) return finish(httpError(400, 'request size did not match content length', 'request.size.invalid'))
    // A copy, as raw-body makes: the parser never keeps a view of a buffer the stream may reuse.
    finish(null, Buffer.concat(chunks, received))
  }

  stream.on('aborted', onAborted)
  stream.on('close', cleanup)
  stream.on('data', onData)
  stream.on('end', onEnd)
  stream.on('error', onEnd)
}
