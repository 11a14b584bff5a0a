import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  type Claim,
  createReceiver,
  type FieldInput,
  type Logger,
  memoryStore,
  type PaymentEvent,
  type PaymentEventName,
  type Receiver,
  type ReceiverOptions,
  type ReceiverResponse,
  type ReceiverStore,
} from '../../src/index.js'
import { REDIRECT_ASKS_AGAIN_AFTER_MS } from '../../src/receiver/dispatch.js'
import { encodeForm, samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const OTHER_TOKEN = 'cd'.repeat(32)
const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'

type Fields = Record<string, FieldInput>

const EVENT_NAMES: PaymentEventName[] = ['payment.succeeded', 'payment.failed', 'payment.pending']

/** Registers a recording handler for every event name. */
function recordEvents(receiver: Receiver): PaymentEvent[] {
  const events: PaymentEvent[] = []
  for (const name of EVENT_NAMES) receiver.on(name, (event) => void events.push(event))
  return events
}

function deliver(
  receiver: Receiver,
  fields: Fields,
  options: { kind?: 'callback' | 'redirect'; token?: string; format?: 'form' | 'json' } = {},
): Promise<ReceiverResponse> {
  const signed = signCallback(fields, options.token ?? TOKEN, { format: options.format ?? 'form' })
  return receiver.handle({ kind: options.kind ?? 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

/** A signed form body with one field changed afterwards, as a forger without the token would do. */
function tampered(fields: Fields, name: string, value: string): { body: string; original: string } {
  const original = signCallback(fields, TOKEN).body
  const params = new URLSearchParams(original)
  expect(params.get(name)).not.toBe(value)
  params.set(name, value)
  return { body: params.toString(), original }
}

const FORM = 'application/x-www-form-urlencoded'

const failedFields = (overrides: Fields = {}): Fields =>
  samplePaymentFields({
    payment_status: 'false',
    transaction_amount_received: '0.00',
    fpx_debit_auth_code: '1C',
    fpx_status: 'false',
    fpx_status_message: 'Buyer cancelled',
    payment_stage: 'payment_unsuccessful',
    ...overrides,
  })

/** Delegates to a real memory store and records every call, so a test can see what reached the store. */
function recordingStore(inner: ReceiverStore = memoryStore()): { store: ReceiverStore; calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    store: {
      claim: (request) => {
        calls.push(`claim ${request.exchangeNumber} ${request.state}`)
        return inner.claim(request)
      },
      complete: (lease) => {
        calls.push(`complete ${lease.exchangeNumber} ${lease.state}`)
        return inner.complete(lease)
      },
      release: (lease) => {
        calls.push(`release ${lease.exchangeNumber} ${lease.state}`)
        return inner.release(lease)
      },
    },
  }
}

/** A memory store that resolves `reached` once `count` claims were made. */
function gatedStore(count: number): { store: ReceiverStore; reached: Promise<void> } {
  const inner = memoryStore()
  let claims = 0
  let open!: () => void
  const reached = new Promise<void>((resolve) => {
    open = resolve
  })
  return {
    reached,
    store: {
      claim: (request) => {
        if (++claims === count) open()
        return inner.claim(request)
      },
      complete: (lease) => inner.complete(lease),
      release: (lease) => inner.release(lease),
    },
  }
}

describe('a logger that throws', () => {
  it('changes no answer: handle() still resolves, processed or refused', async () => {
    const broken = () => {
      throw new Error('log sink down')
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: { debug: broken, info: broken, warn: broken, error: broken } })
    receiver.on('payment.succeeded', () => {})
    const fields = samplePaymentFields({ exchange_number: 'EX-broken-logger' })
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'duplicate' })
    const forged = await receiver.handle({ kind: 'callback', body: 'exchange_number=EX1&checksum=' + 'ab'.repeat(32), contentType: 'application/x-www-form-urlencoded' })
    expect(forged.status).toBeGreaterThanOrEqual(400)
    expect(forged.status).toBeLessThan(500)
  })
})

describe('a logger that cannot log', () => {
  it('is refused when the receiver or client is made, rather than every warning vanishing', async () => {
    const { createClient } = await import('../../src/client/index.js')
    for (const logger of [console.log, 'console', { info: () => {} }, { warn: () => {} }]) {
      expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: logger as never })).toThrow(/logger must be an object with warn and error methods/)
      expect(() => createClient({ environment: { baseUrl: 'http://127.0.0.1:1/api' }, uid: 'u', authToken: 'a', checksumToken: 'c', logger: logger as never })).toThrow(
        /logger must be an object/,
      )
    }
    // Left out (or null): the console; false: silence; pino and console have every level.
    for (const logger of [undefined, null, false, console]) expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: logger as never })).not.toThrow()
  })
})

describe('the memory store called directly', () => {
  // The receiver calls the memory store's claim and complete without their promises, but only while they are
  // the store's own: a merchant's wrapper put on the object itself must still be called.
  it('calls a claim or complete that replaced the store\'s own, and answers what they say', async () => {
    const store = memoryStore()
    const { claim, complete } = store
    const calls: string[] = []
    store.claim = (request) => {
      calls.push(`claim ${request.state}`)
      return claim(request)
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    receiver.on('payment.succeeded', () => {})
    expect((await deliver(receiver, samplePaymentFields())).outcome).toBe('processed')
    expect(calls).toEqual(['claim succeeded'])

    store.complete = async () => {
      calls.push('complete')
      throw new Error('disk full')
    }
    const response = await deliver(receiver, samplePaymentFields({ exchange_number: 'EX-wrapped-2' }))
    expect(response.status).toBe(503)
    expect(response.error?.code).toBe('store_unavailable')
    expect(calls).toEqual(['claim succeeded', 'claim succeeded', 'complete'])

    // Put back, the store's own complete is used directly again (the failed completion's lease is still held).
    store.complete = complete
    expect((await deliver(receiver, samplePaymentFields({ exchange_number: 'EX-wrapped-3' }))).outcome).toBe('processed')
    expect(calls).toEqual(['claim succeeded', 'claim succeeded', 'complete', 'claim succeeded'])
  })
})

describe('a successful B2C payment', () => {
  it('answers 200 OK text, outcome processed, and hands the handler the full event', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields()

    const response = await deliver(receiver, fields)

    expect(response.status).toBe(200)
    expect(response.body).toBe('OK')
    expect(response.headers['content-type']).toMatch(/^text\/plain/)
    expect(response.outcome).toBe('processed')
    expect(response.error).toBeUndefined()
    expect(events).toHaveLength(1)
    const event = events[0]!
    expect(event.id).toBe(`${fields.exchange_number as string}:succeeded`)
    expect(event.name).toBe('payment.succeeded')
    expect(event.state).toBe('succeeded')
    expect(event.previousState).toBeNull()
    expect(event.delivery).toBe('callback')
    expect(event.rendering).toBe('plain')
    expect(event.payment).toMatchObject({
      state: 'succeeded',
      exchangeNumber: fields.exchange_number,
      orderNumber: fields.order_number,
      merchantReferenceNumber: fields.merchant_reference_number,
      paid: true,
      amountSen: 10020,
      amountReceivedSen: 10020,
      feeSen: 100,
      currency: 'MYR',
      model: 'B2C',
      debitAuthCode: '00',
      failureCode: null,
      uid: fields.uid,
    })
    expect(event.payment.createdAt).toEqual(new Date(fields.created_at as string))
    expect({ ...event.fields }).toEqual({ ...fields, checksum: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(Object.getPrototypeOf(event.fields)).toBeNull()
    expect(response.payment).toEqual(event.payment)
  })

  it('keeps answers and events readable when copied, and JSON shows their payment', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields())
    const event = events[0]!
    // A successful answer has no own `error` at all.
    expect('error' in response).toBe(false)
    // Copies that keep the prototype (as deep-clone libraries make) still read the payment instead of throwing.
    const answerCopy = Object.assign(Object.create(Object.getPrototypeOf(response) as object) as typeof response, response)
    expect(answerCopy.payment).toEqual(response.payment)
    const eventCopy = Object.assign(Object.create(Object.getPrototypeOf(event) as object) as typeof event, event)
    expect(eventCopy.payment).toEqual(event.payment)
    expect(eventCopy.fields).toEqual(event.fields)
    const json = JSON.parse(JSON.stringify(response)) as Record<string, unknown>
    expect(Object.keys(json)).toEqual(['status', 'headers', 'body', 'outcome', 'payment'])
    expect((JSON.parse(JSON.stringify(event)) as { payment: { exchangeNumber: string } }).payment.exchangeNumber).toBe(event.payment.exchangeNumber)
  })

  it('accepts a message whose checksum was computed by hand over byte-ordered fields, new ones included', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    // Fields the service might add later, some of them sorting before lowercase names in byte order.
    const fields = { ...samplePaymentFields(), Zeta_future: 'z', interface_name: 'Shop', aaa_new: 'a' } as Record<string, string>
    const names = Object.keys(fields).sort()
    expect(names[0]).toBe('Zeta_future')
    const signedString = names.map((name) => fields[name]).join('|')
    const checksum = createHmac('sha256', TOKEN).update(signedString, 'utf8').digest('hex')
    const body = new URLSearchParams({ ...fields, checksum }).toString()

    const verified = await receiver.verify({ body, contentType: FORM })
    expect(verified.fields.Zeta_future).toBe('z')
    // Names the service is not known to send leave room for renamed values: acted on only once confirmed.
    const response = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([400, 'needs_confirmation'])
    expect(events).toHaveLength(0)
  })
})

describe('deduplication', () => {
  it('runs the handler once for a callback and the redirect of the same result', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields()

    const first = await deliver(receiver, fields, { kind: 'callback' })
    const second = await deliver(receiver, fields, { kind: 'redirect' })
    const third = await deliver(receiver, fields, { kind: 'callback' })

    expect(first.outcome).toBe('processed')
    expect(second.status).toBe(200)
    expect(second.body).toBe('OK')
    expect(second.outcome).toBe('duplicate')
    expect(second.payment?.exchangeNumber).toBe(fields.exchange_number)
    expect(third.outcome).toBe('duplicate')
    expect(events).toHaveLength(1)
    expect(events[0]!.delivery).toBe('callback')
  })

  it('processes a redirect that arrives first, then treats the callback as the duplicate', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields()

    const redirect = await deliver(receiver, fields, { kind: 'redirect' })
    const callback = await deliver(receiver, fields, { kind: 'callback', format: 'json' })

    expect(redirect.outcome).toBe('processed')
    expect(callback.outcome).toBe('duplicate')
    expect(events.map((event) => event.delivery)).toEqual(['redirect'])
  })

  it('keeps different exchange numbers apart', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const a = await deliver(receiver, samplePaymentFields())
    const b = await deliver(receiver, samplePaymentFields())
    expect([a.outcome, b.outcome]).toEqual(['processed', 'processed'])
    expect(events).toHaveLength(2)
  })
})

describe('tampered messages', () => {
  it('refuses a changed transaction_amount with 401 without running a handler or touching the store', async () => {
    const { store, calls } = recordingStore()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields()
    const { body } = tampered(fields, 'transaction_amount', '1.00')

    const forged = await receiver.handle({ kind: 'callback', body, contentType: FORM })

    expect(forged.status).toBe(401)
    expect(forged.outcome).toBe('rejected')
    expect(forged.error?.code).toBe('checksum_mismatch')
    expect(JSON.parse(forged.body)).toEqual({ error: { code: 'checksum_mismatch', message: forged.error?.message } })
    expect(forged.payment).toBeUndefined()
    expect(events).toHaveLength(0)
    expect(calls).toEqual([])

    const genuine = await deliver(receiver, fields)
    expect(genuine.outcome).toBe('processed')
    expect(events).toHaveLength(1)
    expect(events[0]!.payment.amountSen).toBe(10020)
    expect(events[0]!.previousState).toBeNull()
  })

  it('refuses a failure turned into a success, and the genuine failure is still processed afterwards', async () => {
    const { store, calls } = recordingStore()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const events = recordEvents(receiver)
    const fields = failedFields()
    const { body } = tampered(fields, 'payment_status', 'true')

    const forged = await receiver.handle({ kind: 'redirect', body, contentType: FORM })

    expect(forged.status).toBe(401)
    expect(forged.error?.code).toBe('checksum_mismatch')
    expect(events).toHaveLength(0)
    expect(calls).toEqual([])

    // Had the forged success been recorded, the genuine failure would now be stale.
    const genuine = await deliver(receiver, fields)
    expect(genuine.status).toBe(200)
    expect(genuine.outcome).toBe('processed')
    expect(events.map((event) => event.name)).toEqual(['payment.failed'])
  })

  it('refuses a message signed with another Checksum Token', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields(), { token: OTHER_TOKEN })
    expect(response.status).toBe(401)
    expect(response.error?.code).toBe('checksum_mismatch')
    expect(events).toHaveLength(0)
  })
})

describe('classification and state order', () => {
  it('dispatches a cancelled payment (1C) as payment.failed with the failure code', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, failedFields())

    expect(response.status).toBe(200)
    expect(response.outcome).toBe('processed')
    expect(events).toHaveLength(1)
    const event = events[0]!
    expect(event.name).toBe('payment.failed')
    expect(event.state).toBe('failed')
    expect(event.payment.paid).toBe(false)
    expect(event.payment.failureCode).toBe('1C')
    expect(event.payment.failureMessage).toBe('Buyer cancelled')
    expect(event.payment.amountReceivedSen).toBe(0)
  })

  it('B2B1: 99 is pending, then 00 succeeds after pending, then a late 99 is stale', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const pending = samplePaymentFields({ fpx_model: 'B2B1', fpx_debit_auth_code: '99', payment_status: 'false' })
    const approved = { ...pending, fpx_debit_auth_code: '00', payment_status: 'true' }

    const first = await deliver(receiver, pending)
    expect(first.outcome).toBe('processed')
    expect(events.map((event) => event.name)).toEqual(['payment.pending'])
    expect(events[0]!.id).toBe(`${pending.exchange_number as string}:pending`)
    expect(events[0]!.previousState).toBeNull()

    const second = await deliver(receiver, approved)
    expect(second.outcome).toBe('processed')
    expect(events.map((event) => event.name)).toEqual(['payment.pending', 'payment.succeeded'])
    expect(events[1]!.previousState).toBe('pending')
    expect(events[1]!.id).toBe(`${pending.exchange_number as string}:succeeded`)

    const late = await deliver(receiver, pending)
    expect(late.status).toBe(200)
    expect(late.body).toBe('OK')
    expect(late.outcome).toBe('stale')
    expect(events).toHaveLength(2)
  })

  it('a late failure after a success for the same exchange_number is stale', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const success = samplePaymentFields()
    const failure = failedFields({ exchange_number: success.exchange_number, order_number: success.order_number })

    expect((await deliver(receiver, success)).outcome).toBe('processed')
    const late = await deliver(receiver, failure)

    expect(late.status).toBe(200)
    expect(late.outcome).toBe('stale')
    expect(late.payment?.state).toBe('failed')
    expect(events.map((event) => event.name)).toEqual(['payment.succeeded'])
  })

  it('a success after a failure is dispatched with previousState failed', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const failure = failedFields()
    const success = samplePaymentFields({ exchange_number: failure.exchange_number, order_number: failure.order_number })

    await deliver(receiver, failure)
    const response = await deliver(receiver, success)

    expect(response.outcome).toBe('processed')
    expect(events.map((event) => [event.name, event.previousState])).toEqual([
      ['payment.failed', null],
      ['payment.succeeded', 'failed'],
    ])
  })
})

describe('concurrency', () => {
  it('200 concurrent identical deliveries run the handler once and none is acknowledged before it finished', async () => {
    const count = 200
    const { store, reached } = gatedStore(count)
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const order: string[] = []
    let runs = 0
    receiver.on('payment.succeeded', async () => {
      runs++
      // Slow: stays busy until every delivery has asked the store, then one more macrotask.
      await reached
      await new Promise((resolve) => setImmediate(resolve))
      order.push('handler finished')
    })
    const signed = signCallback(samplePaymentFields(), TOKEN)

    const responses = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        receiver
          .handle({ kind: i % 2 === 0 ? 'callback' : 'redirect', body: Buffer.from(signed.body), contentType: signed.contentType })
          .then((response) => {
            order.push('response')
            return response
          }),
      ),
    )

    expect(runs).toBe(1)
    expect(order).toHaveLength(count + 1)
    expect(order[0]).toBe('handler finished')
    expect(responses.every((response) => response.status === 200)).toBe(true)
    expect(responses.filter((response) => response.outcome === 'processed')).toHaveLength(1)
    expect(responses.filter((response) => response.outcome === 'duplicate')).toHaveLength(count - 1)
  })

  it('a throwing handler gets 500 handler_failed and a redelivery runs it again', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    let runs = 0
    receiver.on('payment.succeeded', () => {
      runs++
      if (runs === 1) throw new Error('database unavailable')
    })
    const fields = samplePaymentFields()

    const first = await deliver(receiver, fields)
    expect(first.status).toBe(500)
    expect(first.outcome).toBe('failed')
    expect(first.error?.code).toBe('handler_failed')
    expect(JSON.parse(first.body).error.code).toBe('handler_failed')
    expect(first.payment?.exchangeNumber).toBe(fields.exchange_number)

    const second = await deliver(receiver, fields, { kind: 'redirect' })
    expect(second.status).toBe(200)
    expect(second.outcome).toBe('processed')
    expect(runs).toBe(2)

    expect((await deliver(receiver, fields)).outcome).toBe('duplicate')
    expect(runs).toBe(2)
  })

  it('a handler throwing what String() cannot print still gets 500 handler_failed, and the claim is released', async () => {
    const revoked = Proxy.revocable({}, {})
    revoked.revoke()
    const unprintable = [
      Object.create(null),
      { toString: () => { throw new Error('no text') } },
      Object.assign(new Error('x'), { message: Object.create(null) }),
      Object.assign(new Error('x'), { name: Symbol('odd') }),
      revoked.proxy,
    ]
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    let runs = 0
    receiver.on('payment.succeeded', () => {
      runs++
      if (runs <= unprintable.length) throw unprintable[runs - 1]
    })
    const fields = samplePaymentFields()
    for (let i = 0; i < unprintable.length; i++) expect(await deliver(receiver, fields)).toMatchObject({ status: 500, error: { code: 'handler_failed' } })
    // Released each time: the next delivery runs the handler at once, not after the lease.
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(runs).toBe(unprintable.length + 1)
  })

  it('when the first handler throws, one of the waiting duplicates processes the payment', async () => {
    const count = 20
    const { store, reached } = gatedStore(count)
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const order: string[] = []
    let runs = 0
    receiver.on('payment.succeeded', async () => {
      runs++
      if (runs === 1) {
        await reached
        order.push('first handler threw')
        throw new Error('first attempt fails')
      }
      await new Promise((resolve) => setImmediate(resolve))
      order.push('second handler finished')
    })
    const signed = signCallback(samplePaymentFields(), TOKEN)

    const responses = await Promise.all(
      Array.from({ length: count }, () =>
        receiver.handle({ kind: 'callback', body: signed.body, contentType: signed.contentType }).then((response) => {
          order.push(`response ${response.status}`)
          return response
        }),
      ),
    )

    expect(runs).toBe(2)
    const outcomes = responses.map((response) => `${response.status} ${response.outcome}`).sort()
    expect(outcomes).toEqual(
      [...Array<string>(count - 2).fill('200 duplicate'), '200 processed', '500 failed'].sort(),
    )
    expect(responses.find((response) => response.status === 500)?.error?.code).toBe('handler_failed')
    // No 200 went out before the handler that finally succeeded had finished.
    const finished = order.indexOf('second handler finished')
    expect(finished).toBeGreaterThan(0)
    order.forEach((entry, i) => {
      if (entry === 'response 200') expect(i).toBeGreaterThan(finished)
    })
  })
})

describe('credentials', () => {
  const twoSets = (): ReceiverOptions => ({
    signatureOnly: true,
    credentials: [
      { uid: UID_A, checksumToken: TOKEN },
      { uid: UID_B, checksumToken: OTHER_TOKEN },
    ],
  })

  it('verifies each message with the token of its own uid', async () => {
    const receiver = createReceiver(twoSets())
    const events = recordEvents(receiver)

    const a = await deliver(receiver, samplePaymentFields({ uid: UID_A }), { token: TOKEN })
    const b = await deliver(receiver, samplePaymentFields({ uid: UID_B }), { token: OTHER_TOKEN })
    expect([a.status, b.status]).toEqual([200, 200])
    expect(events.map((event) => event.payment.uid)).toEqual([UID_A, UID_B])

    // Signed with the other set's token: the uid picks the wrong key.
    const crossed = await deliver(receiver, samplePaymentFields({ uid: UID_A }), { token: OTHER_TOKEN })
    expect(crossed.status).toBe(401)
    expect(crossed.error?.code).toBe('checksum_mismatch')
    expect(events).toHaveLength(2)
  })

  it('refuses an unknown uid with 401 unknown_uid when no set signed it', async () => {
    const receiver = createReceiver(twoSets())
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields({ uid: 'ffffffff-0000-4000-8000-000000000000' }), { token: 'ef'.repeat(32) })
    expect(response.status).toBe(401)
    expect(response.outcome).toBe('rejected')
    expect(response.error?.code).toBe('unknown_uid')
    expect(events).toHaveLength(0)
  })

  it('refuses a message without uid when several credential sets are configured and none signed it', async () => {
    const receiver = createReceiver(twoSets())
    const response = await deliver(receiver, samplePaymentFields({ uid: undefined }), { token: 'ef'.repeat(32) })
    expect(response.status).toBe(401)
    expect(response.error?.code).toBe('unknown_uid')
  })

  it('uses the only credential set for a message without uid, or with a uid naming no set', async () => {
    const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: UID_A, checksumToken: TOKEN }] })
    receiver.onAny(() => {})
    const { body } = signCallback(samplePaymentFields({ uid: undefined }), TOKEN)
    expect((await receiver.verify({ body, contentType: FORM })).credential).toEqual({ uid: UID_A, index: 0, by: 'only' })
    const response = await deliver(receiver, samplePaymentFields({ uid: 'merchant-0001' }))
    expect(response.status).toBe(200)
    expect(response.outcome).toBe('processed')
  })

  it('looks the token up with an async resolveChecksumToken', async () => {
    const asked: string[] = []
    const receiver = createReceiver({ signatureOnly: true,
      resolveChecksumToken: async (uid) => {
        asked.push(uid)
        await new Promise((resolve) => setImmediate(resolve))
        return uid === UID_B ? OTHER_TOKEN : undefined
      },
    })
    const events = recordEvents(receiver)

    const known = await deliver(receiver, samplePaymentFields({ uid: UID_B }), { token: OTHER_TOKEN })
    expect(known.status).toBe(200)
    expect(known.outcome).toBe('processed')

    const unknown = await deliver(receiver, samplePaymentFields({ uid: UID_A }))
    expect(unknown.status).toBe(401)
    expect(unknown.error?.code).toBe('unknown_uid')
    expect(asked).toEqual([UID_B, UID_A])
    expect(events).toHaveLength(1)
  })

  it('answers 500 credential_lookup_failed when resolveChecksumToken throws', async () => {
    const receiver = createReceiver({ signatureOnly: true,
      resolveChecksumToken: async () => {
        throw new Error('vault unreachable')
      },
    })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields())
    expect(response.status).toBe(500)
    expect(response.error?.code).toBe('credential_lookup_failed')
    expect(events).toHaveLength(0)
  })
})

describe('options', () => {
  it('throws a TypeError without a credential option', () => {
    expect(() => createReceiver({ signatureOnly: true,} as ReceiverOptions)).toThrow(TypeError)
    expect(() => createReceiver({ signatureOnly: true, checksumToken: '' })).toThrow(TypeError)
  })

  it('throws a TypeError when two credential options are given', () => {
    expect(() =>
      createReceiver({ signatureOnly: true, checksumToken: TOKEN, credentials: [{ uid: UID_A, checksumToken: TOKEN }] } as unknown as ReceiverOptions),
    ).toThrow(TypeError)
    expect(() =>
      createReceiver({ signatureOnly: true, checksumToken: TOKEN, resolveChecksumToken: () => TOKEN } as unknown as ReceiverOptions),
    ).toThrow(TypeError)
  })

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1000'])('throws a TypeError for leaseMs %s', (leaseMs) => {
    expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, leaseMs: leaseMs as number })).toThrow(/leaseMs/)
    expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, leaseMs: leaseMs as number })).toThrow(TypeError)
  })

  it('accepts a positive integer leaseMs', () => {
    expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, leaseMs: 1 })).not.toThrow()
  })
})

describe('field validation after verification', () => {
  it('answers 400 invalid_fields naming a missing exchange_number', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields({ exchange_number: undefined })
    const response = await deliver(receiver, fields)

    expect(response.status).toBe(400)
    expect(response.outcome).toBe('rejected')
    expect(response.error?.code).toBe('invalid_fields')
    expect(response.error?.message).toContain('exchange_number')
    expect(events).toHaveLength(0)
    const signed = signCallback(fields, TOKEN)
    await expect(receiver.verify({ body: signed.body, contentType: signed.contentType })).rejects.toMatchObject({
      code: 'invalid_fields',
      status: 400,
      fields: ['exchange_number'],
    })
  })

  it("answers 400 invalid_fields naming transaction_amount 'abc'", async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields({ transaction_amount: 'abc' })
    const response = await deliver(receiver, fields)

    expect(response.status).toBe(400)
    expect(response.error?.code).toBe('invalid_fields')
    expect(response.error?.message).toContain('transaction_amount')
    expect(JSON.parse(response.body).error.code).toBe('invalid_fields')
    expect(events).toHaveLength(0)
    const signed = signCallback(fields, TOKEN)
    await expect(receiver.verify({ body: signed.body, contentType: signed.contentType })).rejects.toMatchObject({
      code: 'invalid_fields',
      fields: ['transaction_amount'],
    })
  })
})

describe('secrets never leak', () => {
  it('keeps the Checksum Tokens and the Auth Token out of logs, errors and responses', async () => {
    const secret = 'feedface'.repeat(8)
    const otherSecret = '0badc0de'.repeat(8)
    const thirdSecret = 'c0ffee00'.repeat(8)
    const authToken = 'AuthTok3nS3cretXYZ99'
    const logged: string[] = []
    const serialize = (value: unknown): string =>
      JSON.stringify(value, (_key, item: unknown) => {
        if (item instanceof Error) return { name: item.name, message: item.message, stack: item.stack, cause: item.cause }
        if (item instanceof Map) return [...item.entries()]
        return item
      })
    const record =
      (level: string) =>
      (details: object, message: string): void => {
        logged.push(`${level} ${message} ${serialize(details)}`)
      }
    const logger: Logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') }
    const seen: string[] = []
    const keep = (response: ReceiverResponse): ReceiverResponse => {
      seen.push(serialize(response), response.body, response.error?.message ?? '')
      return response
    }

    const receiver = createReceiver({ signatureOnly: true,
      credentials: [
        { uid: UID_A, checksumToken: secret },
        { uid: UID_B, checksumToken: otherSecret },
      ],
      logger,
      // Every refused checksum diagnosed, so that every diagnosis is checked for leaks too.
      diagnosisPerSecond: 1000,
    })
    receiver.on('payment.succeeded', (event) => {
      if (event.payment.orderNumber === 'ORD-THROWS') throw new Error('handler failed for this order')
    })
    receiver.on('payment.failed', () => {})
    const withToken = (overrides: Fields = {}): Fields => samplePaymentFields({ token: authToken, uid: UID_A, ...overrides })
    const send = async (fields: Fields, token = secret, kind: 'callback' | 'redirect' = 'callback') =>
      keep(await deliver(receiver, fields, { token, kind }))
    const sendRaw = async (body: unknown, contentType: string) =>
      keep(await receiver.handle({ kind: 'callback', body: body as string, contentType }))

    const paid = withToken()
    expect((await send(paid)).outcome).toBe('processed')
    expect((await send(paid, secret, 'redirect')).outcome).toBe('duplicate')
    expect((await send(failedFields({ token: authToken, uid: UID_A, exchange_number: paid.exchange_number }))).outcome).toBe('stale')
    expect((await send(withToken({ uid: UID_B }), otherSecret)).status).toBe(200)
    expect((await send(withToken({ params: { reference1_label: 'Size', reference1: 'XL' } }))).status).toBe(200)
    expect((await send(withToken(), otherSecret)).error?.code).toBe('checksum_mismatch')
    // A uid that names no set is tried against every set's token: signed by one of them it is accepted.
    expect((await send(withToken({ uid: 'ffffffff-0000-4000-8000-000000000000' }))).status).toBe(200)
    expect((await send(withToken({ uid: 'ffffffff-0000-4000-8000-000000000000' }), thirdSecret)).error?.code).toBe('unknown_uid')
    expect((await send(withToken({ uid: undefined }), thirdSecret)).error?.code).toBe('unknown_uid')
    expect((await send(withToken({ transaction_amount: 'abc' }))).error?.code).toBe('invalid_fields')
    expect((await send(withToken({ exchange_number: undefined }))).error?.code).toBe('invalid_fields')
    expect((await send(withToken({ order_number: 'ORD-THROWS' }))).error?.code).toBe('handler_failed')
    const forged = tampered(withToken(), 'transaction_amount', '1.00')
    expect((await sendRaw(forged.body, FORM)).error?.code).toBe('checksum_mismatch')
    const unsigned = encodeForm(withToken())
    expect((await sendRaw(unsigned, FORM)).error?.code).toBe('checksum_missing')
    expect((await sendRaw(`${unsigned}&checksum=${'12'.repeat(20)}`, FORM)).error?.code).toBe('checksum_malformed')
    expect((await sendRaw(`${forged.original}&token=${authToken}`, FORM)).error?.code).toBe('duplicate_field')
    expect((await sendRaw(forged.original, 'text/plain')).error?.code).toBe('unsupported_media_type')
    expect((await sendRaw({ token: authToken }, FORM)).error?.code).toBe('body_already_parsed')
    expect((await sendRaw(`${forged.original}&x=%ZZ`, FORM)).status).toBe(400)
    for (const fields of [withToken(), withToken({ transaction_amount: 'abc' }), withToken({ uid: 'nobody' })]) {
      const signed = signCallback(fields, secret)
      await receiver.verify({ body: signed.body, contentType: signed.contentType }).then(
        (verified) => seen.push(serialize(verified.payment)),
        (error: unknown) => seen.push(serialize(error), String(error)),
      )
    }

    const tinyLimit = createReceiver({ signatureOnly: true, checksumToken: secret, logger, maxBodyBytes: 100 })
    keep(await deliver(tinyLimit, withToken(), { token: secret }))
    const lookupFails = createReceiver({ signatureOnly: true,
      logger,
      resolveChecksumToken: () => {
        throw new Error('vault unreachable')
      },
    })
    expect(keep(await deliver(lookupFails, withToken(), { token: secret })).error?.code).toBe('credential_lookup_failed')
    const brokenStore: ReceiverStore = {
      claim: async () => {
        throw new Error('store connection refused')
      },
      complete: async () => false,
      release: async () => false,
    }
    const storeFails = createReceiver({ signatureOnly: true, checksumToken: secret, logger, store: brokenStore })
    expect(keep(await deliver(storeFails, withToken(), { token: secret })).error?.code).toBe('store_unavailable')

    // Refused checksums carry a diagnosis (log line, response.error, timeline): a token with stray characters is
    // named by them, an Auth Token added after signing by its field name, another set by its uid; no token ever.
    const dirty = createReceiver({ signatureOnly: true, checksumToken: `${secret}\u200b `, logger })
    const dirtyFields = withToken()
    expect(keep(await deliver(dirty, dirtyFields, { token: secret })).error?.diagnosis?.match?.kind).toBe('checksum_token')
    seen.push(serialize(await dirty.timeline(String(dirtyFields.order_number))))
    const tokenAdded = `${signCallback(withToken({ token: undefined }), secret).body}&token=${authToken}`
    expect(keep(await sendRaw(tokenAdded, FORM)).error?.diagnosis?.match).toMatchObject({ kind: 'field_added', field: 'token' })
    expect(keep(await send(withToken(), otherSecret)).error?.diagnosis?.match?.kind).toBe('other_credential')
    expect(keep(await send(withToken({ uid: 'ffffffff-0000-4000-8000-000000000000' }), thirdSecret)).error?.diagnosis?.verdict).toBe('unexplained')

    // The collection is not empty: each level was written and the failures are in it.
    const everything = [...logged, ...seen].join('\n')
    for (const level of ['debug', 'info', 'warn', 'error']) expect(logged.some((line) => line.startsWith(level))).toBe(true)
    for (const code of ['checksum_mismatch', 'unknown_uid', 'invalid_fields', 'handler_failed', 'store_unavailable', 'body_too_large'])
      expect(everything).toContain(code)
    expect(everything).toContain('store connection refused')
    for (const words of ['Diagnosis: the checksum verifies with', 'U+200B ZERO WIDTH SPACE', 'field \\"token\\" left out', 'unexplained'])
      expect(everything).toContain(words)

    for (const value of [secret, otherSecret, thirdSecret, authToken]) {
      expect(everything).not.toContain(value)
      expect(everything).not.toContain(value.slice(0, 16))
    }
  })
})

describe('stores', () => {
  it('answers 503 store_unavailable with retry-after when claim throws, without running a handler', async () => {
    const store: ReceiverStore = {
      claim: async () => {
        throw new Error('connection refused')
      },
      complete: async () => true,
      release: async () => true,
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields())

    expect(response.status).toBe(503)
    expect(response.error?.code).toBe('store_unavailable')
    expect(response.outcome).toBe('failed')
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
    expect(Number.isInteger(Number(response.headers['retry-after']))).toBe(true)
    expect(events).toHaveLength(0)
  })

  it('answers 409 in_progress with retry-after at once when another process holds the payment', async () => {
    const claims: string[] = []
    const store: ReceiverStore = {
      claim: async (request) => {
        claims.push(request.exchangeNumber)
        return { outcome: 'busy', retryAfterMs: 2500 }
      },
      complete: async () => true,
      release: async () => true,
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    const events = recordEvents(receiver)
    const fields = samplePaymentFields()
    const response = await deliver(receiver, fields)

    expect(response.status).toBe(409)
    expect(response.outcome).toBe('busy')
    expect(response.error?.code).toBe('in_progress')
    expect(response.headers['retry-after']).toBe('3')
    expect(claims).toEqual([fields.exchange_number])
    expect(events).toHaveLength(0)
  })

  it("asks once more, after a pause, when a buyer's redirect finds the payment held by another process", async () => {
    const asked: number[] = []
    const answers: Claim[] = [{ outcome: 'busy', retryAfterMs: 2500 }, { outcome: 'duplicate' }]
    const store: ReceiverStore = {
      claim: async () => {
        asked.push(performance.now())
        return answers.shift() ?? { outcome: 'busy', retryAfterMs: 2500 }
      },
      complete: async () => true,
      release: async () => true,
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
    const response = await deliver(receiver, samplePaymentFields(), { kind: 'redirect' })
    expect(response).toMatchObject({ status: 200, outcome: 'duplicate' })
    expect(asked).toHaveLength(2)
    expect((asked[1] as number) - (asked[0] as number)).toBeGreaterThanOrEqual(REDIRECT_ASKS_AGAIN_AFTER_MS - 10)
  })

  it('asks only once more: a redirect whose payment is still held elsewhere is answered in_progress', async () => {
    let asked = 0
    const store: ReceiverStore = {
      claim: async () => {
        asked++
        return { outcome: 'busy', retryAfterMs: 2500 }
      },
      complete: async () => true,
      release: async () => true,
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
    const response = await deliver(receiver, samplePaymentFields(), { kind: 'redirect' })
    expect(response).toMatchObject({ status: 409, outcome: 'busy', error: { code: 'in_progress' } })
    expect(asked).toBe(2)
  })

  it('caps Retry-After at 5 s even when the lease has a minute left', async () => {
    const store: ReceiverStore = {
      claim: async () => ({ outcome: 'busy', retryAfterMs: 60_000 }),
      complete: async () => true,
      release: async () => true,
    }
    const response = await deliver(createReceiver({ signatureOnly: true, checksumToken: TOKEN, store }), samplePaymentFields())
    expect(response.status).toBe(409)
    expect(response.headers['retry-after']).toBe('5')
  })
})

describe('handlers', () => {
  it('can be removed with the function on() returns', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const calls: string[] = []
    const off = receiver.on('payment.succeeded', () => void calls.push('removed'))
    receiver.on('payment.succeeded', () => void calls.push('kept'))

    off()
    const response = await deliver(receiver, samplePaymentFields())

    expect(response.outcome).toBe('processed')
    expect(calls).toEqual(['kept'])
    off()
    await deliver(receiver, samplePaymentFields())
    expect(calls).toEqual(['kept', 'kept'])
  })

  it('runs several handlers for one event in registration order, each awaited', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const calls: string[] = []
    receiver.on('payment.succeeded', async () => {
      await new Promise((resolve) => setImmediate(resolve))
      calls.push('first')
    })
    receiver.on('payment.succeeded', () => void calls.push('second'))
    receiver.on('payment.failed', () => void calls.push('failed handler'))
    receiver.on('payment.succeeded', async () => {
      calls.push('third')
    })

    await deliver(receiver, samplePaymentFields())

    expect(calls).toEqual(['first', 'second', 'third'])
  })

  it('rejects an unknown event name', () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    expect(() => receiver.on('payment.refunded' as PaymentEventName, () => {})).toThrow(TypeError)
  })
})

describe('review fixes', () => {
  it('refuses a known text field sent as a nested object with 400 invalid_fields', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields({ source: { a: '1' } }))
    expect(response.status).toBe(400)
    expect(response.error?.code).toBe('invalid_fields')
    expect(response.error?.message).toContain('source')
    expect(events).toHaveLength(0)
  })

  it('signs a form delivery with an empty params object as the service would send it: without params', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events = recordEvents(receiver)
    const response = await deliver(receiver, samplePaymentFields({ params: {} }))
    expect(response.status).toBe(200)
    expect(events).toHaveLength(1)
    expect(events[0]!.fields.params).toBeUndefined()
  })

  it('logs the error resolveChecksumToken threw, so the merchant can see why the lookup failed', async () => {
    const calls: { details: object; message: string }[] = []
    const record = (details: object, message: string) => void calls.push({ details, message })
    const logger: Logger = { debug: record, info: record, warn: record, error: record }
    const cause = new Error('database is down')
    const receiver = createReceiver({ signatureOnly: true, resolveChecksumToken: () => Promise.reject(cause), logger })
    const response = await deliver(receiver, samplePaymentFields())
    expect(response.status).toBe(500)
    expect(response.error?.code).toBe('credential_lookup_failed')
    expect(calls.some((call) => (call.details as { err?: unknown }).err === cause)).toBe(true)
    expect(response.body).not.toContain('database is down')
  })
})
