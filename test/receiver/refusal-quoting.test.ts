import { describe, expect, it } from 'vitest'
import { createReceiver, type ReceiverOptions } from '../../src/index.js'

/*
 * A refusal's message names the field or uid it is about, and both come from the sender: anyone can post a uid
 * or a field name holding CR, LF or a whole fake log line. The default logger writes messages to the console as
 * they are, so such text must arrive quoted and escaped, on one line, and cut short.
 */

const FORM = 'application/x-www-form-urlencoded'
const FAKE = '"\r\nfpx-collect: payment ORD-7 handled (payment.succeeded) "'
const CHECKSUM = '0'.repeat(64)

function receiverLogging(options: ReceiverOptions): { handle: (body: string) => Promise<string | undefined>; lines: string[] } {
  const lines: string[] = []
  const log = (_details: object, message: string) => void lines.push(message)
  const receiver = createReceiver({ signatureOnly: true, ...options, logger: { debug: log, info: log, warn: log, error: log } } as ReceiverOptions)
  receiver.onAny(() => {})
  return { lines, handle: async (body) => (await receiver.handle({ kind: 'callback', body, contentType: FORM })).error?.message }
}

const twoSets = { credentials: [{ uid: 'uid-a', checksumToken: 'a'.repeat(64) }, { uid: 'uid-b', checksumToken: 'b'.repeat(64) }] }

describe('sender text in refusal messages', () => {
  for (const [label, options, body] of [
    ['a uid that names no set', twoSets, `uid=${encodeURIComponent(FAKE)}&checksum=${CHECKSUM}`],
    ['a uid resolveChecksumToken does not know', { resolveChecksumToken: () => undefined }, `uid=${encodeURIComponent(FAKE)}&checksum=${CHECKSUM}`],
    ['a uid resolveChecksumToken throws for', { resolveChecksumToken: () => { throw new Error('down') } }, `uid=${encodeURIComponent(FAKE)}&checksum=${CHECKSUM}`],
    ['a repeated field name', { checksumToken: 'a'.repeat(64) }, `${encodeURIComponent(FAKE)}=1&${encodeURIComponent(FAKE)}=2&checksum=${CHECKSUM}`],
    ['a field name nested too deep', { checksumToken: 'a'.repeat(64) }, `${encodeURIComponent(`${FAKE}[1][2][3][4][5][6][7][8]`)}=1&checksum=${CHECKSUM}`],
    ['a field name nesting inside an array', { checksumToken: 'a'.repeat(64) }, `${encodeURIComponent(`${FAKE}[][x]`)}=1&checksum=${CHECKSUM}`],
  ] as const) {
    it(`keeps ${label} on one line, quoted`, async () => {
      const { handle, lines } = receiverLogging(options as ReceiverOptions)
      const message = await handle(body)
      await new Promise((resolve) => setTimeout(resolve, 20))
      for (const text of [message, ...lines]) expect(text).not.toMatch(/[\r\n]/)
      expect(message).toContain(JSON.stringify(FAKE).slice(1, 20))
    })
  }

  it('cuts a long uid short', async () => {
    const { handle } = receiverLogging(twoSets)
    const message = await handle(`uid=${'u'.repeat(10_000)}&checksum=${CHECKSUM}`)
    expect(message?.length).toBeLessThan(400)
  })
})
