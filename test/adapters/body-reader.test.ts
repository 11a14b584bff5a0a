import { PassThrough } from 'node:stream'
import getRawBody from 'raw-body'
import { describe, expect, it } from 'vitest'
import { withinTime } from '../../src/core/result/body.js'
import { readBodyWithin } from '../../src/http/body-reader.js'

interface Outcome {
  status?: number
  message?: string
  body?: string
}

type Feed = (stream: PassThrough) => void

/** A request stream; with `encoding`, one a careless preParsing hook has set to text, which no checksum can be read from. */
function requestStream(encoding?: BufferEncoding): PassThrough {
  const stream = new PassThrough()
  if (encoding !== undefined) stream.setEncoding(encoding)
  return stream
}

const settle = (reading: Promise<Buffer>): Promise<Outcome> =>
  reading.then(
    (body) => ({ body: body.toString('latin1') }),
    (error: { status?: number; message: string }) => ({ status: error.status, message: error.message }),
  )

/** What raw-body within withinTime made of a stream, as the Fastify plugin read bodies before. */
function before(headers: Record<string, string>, limit: number, timeoutMs: number, feed: Feed, encoding?: BufferEncoding): Promise<Outcome> {
  const stream = requestStream(encoding)
  const reading = settle(withinTime(getRawBody(stream, { limit, length: headers['content-length'] ?? null }), timeoutMs))
  feed(stream)
  return reading
}

function now(headers: Record<string, string>, limit: number, timeoutMs: number, feed: Feed, encoding?: BufferEncoding): Promise<Outcome> {
  const stream = requestStream(encoding)
  const reading = settle(
    new Promise<Buffer>((resolve, reject) => readBodyWithin(stream, headers, limit, timeoutMs, (error, body) => (error ? reject(error) : resolve(body!)))),
  )
  feed(stream)
  return reading
}

const cases: [string, Record<string, string>, number, Feed][] = [
  ['a body in two chunks', { 'content-length': '7' }, 100, (s) => (s.write('abc'), s.end('defg'))],
  ['a chunked body (no length)', {}, 100, (s) => (s.write('abc'), s.end('d'))],
  ['an empty body', { 'content-length': '0' }, 100, (s) => s.end()],
  ['a declared length over the limit, unread', { 'content-length': '101' }, 100, () => undefined],
  ['chunks past the limit', {}, 5, (s) => (s.write('abc'), s.write('def'), s.end())],
  ['a body shorter than declared', { 'content-length': '9' }, 100, (s) => s.end('abc')],
  ['a body longer than declared', { 'content-length': '2' }, 100, (s) => s.end('abc')],
  ['a stream error', {}, 100, (s) => (s.write('abc'), s.destroy(Object.assign(new Error('boom'), { status: 400 })))],
  ['a body that never ends', {}, 100, (s) => s.write('abc')],
]

describe('readBodyWithin', () => {
  it.each(cases)('reads %s as raw-body within withinTime did', async (_name, headers, limit, feed) => {
    const [old, read] = await Promise.all([before(headers, limit, 50, feed), now(headers, limit, 50, feed)])
    expect(read).toEqual(old)
  })

  it('refuses a stream set to text with a 500 error, as raw-body did', async () => {
    const feed: Feed = (s) => s.end('abc')
    const [old, read] = await Promise.all([before({}, 100, 50, feed, 'utf8'), now({}, 100, 50, feed, 'utf8')])
    expect([read, read]).toEqual([old, { status: 500, message: 'stream encoding should not be set' }])
  })

  it('answers a body that never ends with a 408 error once the time is up', async () => {
    expect(await now({}, 100, 20, (s) => s.write('abc'))).toEqual({ status: 408, message: 'the request body did not arrive in time' })
  })

  it('hands over a copy of the bytes, so a chunk the stream reuses does not change the body', async () => {
    const chunk = Buffer.from('abc')
    const read = now({}, 100, 50, (s) => s.end(chunk))
    await new Promise((resolve) => setImmediate(resolve))
    chunk.write('xyz')
    expect(await read).toEqual({ body: 'abc' })
  })
})
