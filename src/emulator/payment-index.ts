import { mytDay, type PaymentRecord } from './records.js'

/**
 * The emulator's payments, with the lookups its API makes kept beside them, so that a status, a search or a page
 * of the transactions list costs what it answers, not what the emulator holds. A merchant's load test (a sale day
 * rehearsed against the emulator) would otherwise mostly measure the emulator.
 *
 * Every change to a payment goes through `add` or `completed`; the state rebuilds the index when it loads a
 * snapshot or resets.
 */

/** Whose transactions list a payment appears in: its merchant's, and its partner's when a partner created it. */
export type Scope = `merchant:${string}` | `partner:${string}`

/** One scope's payments of one Malaysian calendar day, oldest first, and how many of them succeeded. */
interface DayBucket {
  readonly records: PaymentRecord[]
  succeeded: number
}

export interface ListQuery {
  /** Inclusive Malaysian calendar days (days since the epoch); the API allows at most 90 of them. */
  readonly fromDay: number
  readonly toDay: number
  readonly paymentStatus: 'true' | 'false' | 'all'
  readonly offset: number
  readonly limit: number
}

export interface ListPage {
  /** Every payment that matches, not only this page's. */
  readonly total: number
  /** Newest first. */
  readonly records: PaymentRecord[]
}

/** Oldest first: by creation time, then payment_id among payments created in the same millisecond. */
export function olderFirst(a: PaymentRecord, b: PaymentRecord): number {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.paymentId - b.paymentId
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

/** Puts `record` in its place in a list kept oldest first; a clock that only moves forward makes it an append. */
function insertInOrder(records: PaymentRecord[], record: PaymentRecord): void {
  const last = records.at(-1)
  if (last === undefined || olderFirst(last, record) <= 0) {
    records.push(record)
    return
  }
  let low = 0
  let high = records.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (olderFirst(records[middle] as PaymentRecord, record) <= 0) low = middle + 1
    else high = middle
  }
  records.splice(low, 0, record)
}

export class PaymentIndex {
  /** Creation order, as the state file keeps them. */
  readonly all: PaymentRecord[] = []
  private readonly byExchangeNumber = new Map<string, PaymentRecord>()
  private readonly byMerchantReference = new Map<string, PaymentRecord>()
  /** Every attempt at an order number, of every merchant, in creation order. */
  private readonly byOrderNumber = new Map<string, PaymentRecord[]>()
  /** By fpx_transaction_id, the bank's reference, once the bank answered. */
  private readonly byBankReference = new Map<string, PaymentRecord[]>()
  private readonly days = new Map<Scope, Map<number, DayBucket>>()

  /** `scopesOf` names the lists a payment belongs to; it is asked once per payment, when it is added. */
  constructor(private readonly scopesOf: (record: PaymentRecord) => readonly Scope[]) {}

  add(record: PaymentRecord): void {
    this.all.push(record)
    this.byExchangeNumber.set(record.exchangeNumber, record)
    this.byMerchantReference.set(record.merchantReferenceNumber, record)
    pushTo(this.byOrderNumber, record.orderNumber, record)
    if (record.bank !== null) pushTo(this.byBankReference, record.bank.transactionId, record)
    const day = mytDay(new Date(record.createdAt))
    for (const scope of this.scopesOf(record)) {
      let days = this.days.get(scope)
      if (days === undefined) this.days.set(scope, (days = new Map()))
      let bucket = days.get(day)
      if (bucket === undefined) days.set(day, (bucket = { records: [], succeeded: 0 }))
      insertInOrder(bucket.records, record)
      if (record.paymentStatus) bucket.succeeded++
    }
  }

  /**
   * After the bank answered a payment already added: its bank reference becomes searchable and the lists'
   * counts follow its payment_status. `wasPaid` and `hadBankReference` are what the record said before.
   */
  completed(record: PaymentRecord, wasPaid: boolean, hadBankReference: boolean): void {
    if (!hadBankReference && record.bank !== null) pushTo(this.byBankReference, record.bank.transactionId, record)
    if (wasPaid === record.paymentStatus) return
    const day = mytDay(new Date(record.createdAt))
    for (const scope of this.scopesOf(record)) {
      const bucket = this.days.get(scope)?.get(day)
      if (bucket !== undefined) bucket.succeeded += record.paymentStatus ? 1 : -1
    }
  }

  byExchange(exchangeNumber: string): PaymentRecord | undefined {
    return this.byExchangeNumber.get(exchangeNumber)
  }

  byReference(merchantReferenceNumber: string): PaymentRecord | undefined {
    return this.byMerchantReference.get(merchantReferenceNumber)
  }

  /** Whether a new reference would collide with either number of an existing payment. */
  referenceTaken(value: string): boolean {
    return this.byExchangeNumber.has(value) || this.byMerchantReference.has(value)
  }

  /** Every attempt at `orderNumber`, whichever merchant made it, oldest first. */
  attempts(orderNumber: string): readonly PaymentRecord[] {
    return this.byOrderNumber.get(orderNumber) ?? []
  }

  byBank(transactionId: string): readonly PaymentRecord[] {
    return this.byBankReference.get(transactionId) ?? []
  }

  /**
   * One page of a scope's transactions list: the days of the window newest first, each day's payments newest
   * first. The kept counts give the total and let whole days before the page be passed over; only the page's
   * days are walked, and the walk stops once the page is full.
   */
  page(scope: Scope, query: ListQuery): ListPage {
    const records: PaymentRecord[] = []
    const days = this.days.get(scope)
    let total = 0
    let skip = query.offset
    for (let day = query.toDay; days !== undefined && day >= query.fromDay; day--) {
      const bucket = days.get(day)
      if (bucket === undefined) continue
      const all = bucket.records.length
      const matching = query.paymentStatus === 'all' ? all : query.paymentStatus === 'true' ? bucket.succeeded : all - bucket.succeeded
      total += matching
      if (records.length >= query.limit || matching === 0) continue
      if (skip >= matching) {
        skip -= matching
        continue
      }
      for (let i = all - 1; i >= 0 && records.length < query.limit; i--) {
        const record = bucket.records[i] as PaymentRecord
        if (query.paymentStatus !== 'all' && String(record.paymentStatus) !== query.paymentStatus) continue
        if (skip > 0) skip--
        else records.push(record)
      }
    }
    return { total, records }
  }
}
