/**
 * receiver.handle() never throws (receive.ts): not even for a delivery that is no object at all, which a merchant's
 * hand-written route can pass (an undefined from a framework that had no body). It is answered with a status and a
 * code, and logged; a rejected handle() left unawaited ends a Node process.
 */
import { expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'

it.each([null, undefined])('receiver.handle(%s) answers 500 internal_error, logged, and does not reject', async (delivery) => {
  const errors: unknown[] = []
  const logger: Logger = { debug() {}, info() {}, warn() {}, error: (details) => void errors.push(details) }
  const receiver = createReceiver({ signatureOnly: true, checksumToken: 'ab'.repeat(32), logger })
  receiver.onAny(() => {})
  const response = await receiver.handle(delivery as never)
  expect([response.status, response.error?.code]).toEqual([500, 'internal_error'])
  expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'internal_error' } })
  expect(errors).toHaveLength(1)
})
