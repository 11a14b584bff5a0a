/*
 * What an operator does to one payment from the console, through the receiver that handles it: read what the
 * service's API shows of it, have it looked up now (what the API shows goes to the handlers, handed over as the
 * sweeper hands it), and make its inbox entries due again. Each action lands on the payment's timeline with the
 * operator's name, so that a later reader sees who did what.
 */
import { apiRecordText, classify, hasBankAnswer, type PaymentState, STATE_RANK } from '../core/payment.js'
import { dataWithoutSecrets } from '../core/result/without-secrets.js'
import type { InboxItem } from '../contract/inbox-queue.js'
import type { PaymentBook } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import type { ReceiverInbox } from '../inbox/inbox.js'
import { type ConfirmingClient, described } from './confirm.js'
import type { Outcome, ReceiverResponse } from './events.js'
import type { TimelineRecorder } from './timeline.js'

/** Which payment: its order_number, and the API UID of the credential set that created it when known. */
export interface OperatorOrder {
  readonly orderNumber: string
  readonly uid?: string
}

/** What a lookup made now found and did. */
export interface LookUpAnswer {
  /** The highest state the API shows among the order's attempts with a bank answer; null when none has one. */
  readonly shown: PaymentState | null
  /** How the receiver took each result handed to it (none when the API shows no bank answer). */
  readonly outcomes: readonly Outcome[]
  /** One sentence for the operator, also written on the timeline. */
  readonly message: string
}

/** An inbox entry to make due again, with the order its timeline is kept under. */
export type RetryItem = Pick<InboxItem, 'exchangeNumber' | 'state' | 'orderNumber'>

/** `receiver.operator`: the console's actions. Every one that changes something is noted with `by`. */
export interface ReceiverOperator {
  /** Whether the receiver can ask the service's API (it was given credentials or a client). */
  readonly canLookUp: boolean
  /** The API's records of the order's attempts, newest first, as the API client returns them. Rejects without the API. */
  records(order: OperatorOrder): Promise<readonly Record<string, unknown>[]>
  /** Looks the payment up now and hands what the API shows to the receiver (its handlers run for a new state). */
  lookUp(order: OperatorOrder, by: string): Promise<LookUpAnswer>
  /** Makes these inbox entries due now (dead ones pending again); says how many were. */
  retry(items: readonly RetryItem[], by: string): Promise<number>
}

export interface OperatorParts {
  /** The API client of a credential set (by API UID; undefined: the receiver's first), or undefined without the API. */
  readonly client: ((uid: string | undefined) => ConfirmingClient | undefined) | undefined
  readonly handOver: (fields: Record<string, string>, uid: string | undefined) => Promise<ReceiverResponse>
  /** The credentials' own values, which the records shown must not hold (the buyer may type the Auth Token). */
  readonly secrets: (uid: string | undefined) => Promise<readonly string[]>
  readonly book: PaymentBook | undefined
  readonly inbox: ReceiverInbox
  readonly timeline: TimelineRecorder
}

const MAX_NAME = 100

/** An operator's name as the timeline keeps it: one line of printable text, never empty. */
export function operatorName(by: unknown): string {
  // eslint-disable-next-line no-control-regex
  const name = typeof by === 'string' ? by.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, MAX_NAME) : ''
  return name === '' ? 'an operator' : name
}

export function receiverOperator(parts: OperatorParts): ReceiverOperator {
  const { timeline } = parts
  const note = (entry: Omit<TimelineEntry, 'at' | 'source' | 'attempt' | 'verified' | 'code' | 'status'>) =>
    timeline.record([{ ...entry, at: new Date(), source: 'console', attempt: timeline.nextAttempt(), verified: true, code: null, status: null }])

  async function records(order: OperatorOrder): Promise<readonly Record<string, unknown>[]> {
    const client = parts.client?.(order.uid)
    if (client === undefined) throw new TypeError('this receiver cannot ask the service API: it has no environment and credentials, nor client')
    const found = (await client.searchTransactions('order_number', order.orderNumber)) as readonly Record<string, unknown>[]
    return found.filter((record) => record?.order_number === order.orderNumber)
  }

  return {
    canLookUp: parts.client !== undefined,
    // Shown on the console's pages: a record holds what the buyer typed, the Auth Token if they typed it. Handed over
    // as they are (lookUp): the receiver hides it from the handlers and the book as it hides it in results.
    async records(order) {
      const [found, secrets] = await Promise.all([records(order), parts.secrets(order.uid)])
      return dataWithoutSecrets(found, secrets)
    },
    async lookUp(order, by) {
      const who = operatorName(by)
      let found: readonly Record<string, unknown>[]
      try {
        found = await records(order)
      } catch (error) {
        if (error instanceof TypeError) throw error
        const message = `looked up by ${who}: the status API could not be asked (${described(error)})`
        note({ event: 'looked_up', exchangeNumber: null, orderNumber: order.orderNumber, state: null, message })
        return { shown: null, outcomes: [], message }
      }
      // Oldest attempt first, as the sweeper hands them over: a failed attempt before the retry that succeeded.
      // A paid order stays paid: its failed attempts are not handed over beside its success (sweep-results.ts).
      const attempts = found.filter(hasBankAnswer).reverse()
      const paid = attempts.filter((record) => classify(String(record.payment_status), typeof record.fpx_debit_auth_code === 'string' ? record.fpx_debit_auth_code : undefined) === 'succeeded')
      const answered = paid.length > 0 ? paid : attempts
      const outcomes: Outcome[] = []
      let shown: PaymentState | null = null
      for (const record of answered) {
        const response = await parts.handOver(apiRecordText(record), order.uid)
        outcomes.push(response.outcome)
        const state = response.payment?.state ?? null
        if (state === null) continue
        if (shown === null || STATE_RANK[state] > STATE_RANK[shown]) shown = state
        // Handled before, but the book missed it (as the sweeper does): settled now.
        if (response.outcome === 'duplicate' && order.uid !== undefined)
          await parts.book?.settle({ uid: order.uid, orderNumber: order.orderNumber }, state, String(record.exchange_number)).catch(() => false)
      }
      const latest = answered.at(-1)
      const what =
        found.length === 0
          ? 'no payment with this order_number'
          : shown === null
            ? 'no bank answer yet'
            : `${shown === 'pending' ? 'pending approval (99)' : shown}; handed to the receiver (${outcomes.join(', ')})`
      const message = `looked up by ${who}: the status API shows ${what}`
      note({ event: 'looked_up', exchangeNumber: latest === undefined ? null : String(latest.exchange_number), orderNumber: order.orderNumber, state: shown, message })
      return { shown, outcomes, message }
    },
    async retry(items, by) {
      const who = operatorName(by)
      let count = 0
      for (const item of items) {
        const retried = await parts.inbox.retry({ exchangeNumber: item.exchangeNumber, state: item.state })
        if (retried === 0) continue
        count += retried
        note({ event: 'retried', exchangeNumber: item.exchangeNumber, orderNumber: item.orderNumber, state: item.state, message: `inbox entry made due now by ${who}` })
      }
      return count
    },
  }
}
