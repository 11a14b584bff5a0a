import { timingSafeEqual } from 'node:crypto'
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { jsonErrorPlace } from '../core/json-error.js'
import { messageChecksum } from '../core/result/checksum.js'
import type { FieldInput } from '../core/values.js'
import type { Bank, CredentialSet, Merchant, Partner, Setup } from './config.js'
import { ApiError } from './errors.js'
import { randomDigits, uniqueReference } from './ids.js'
import { type ListPage, type ListQuery, olderFirst, PaymentIndex, type Scope } from './payment-index.js'
import { type BankResult, fpxTime, type Model, type PaymentRecord, type PaymentSession, type RecordContext, resultFieldsOf } from './records.js'
import { WarningLog } from './warnings.js'

export type { BankResult, Model, PaymentRecord, PaymentSession } from './records.js'

/** Who a Basic-authenticated request comes from. */
export type Principal =
  | { readonly kind: 'merchant'; readonly merchant: Merchant; readonly credential: CredentialSet }
  | { readonly kind: 'partner'; readonly partner: Partner; readonly credential: CredentialSet }

export type CompletionOutcome = 'approve' | 'reject' | 'cancel' | 'pending'

export type NewPayment = Omit<PaymentRecord, 'paymentId' | 'exchangeNumber' | 'merchantReferenceNumber' | 'createdAt' | 'paymentStatus' | 'paymentStage' | 'bank'>

interface Snapshot {
  version: 1
  setup: Setup
  payments: readonly PaymentRecord[]
  nextPaymentId: number
  /** Absent in snapshots written before payment sessions existed. */
  sessions?: readonly PaymentSession[]
}

/** Bank answers per outcome. Codes other than 00 and 99 are failures; 1C is the buyer's cancel. */
const BANK_ANSWERS = {
  approve: { code: '00', message: 'Approved', fpxStatus: true },
  reject: { code: '51', message: 'Insufficient funds', fpxStatus: false },
  cancel: { code: '1C', message: 'Buyer cancelled the transaction', fpxStatus: false },
  pending: { code: '99', message: 'Pending for authorizer approval', fpxStatus: false },
} as const

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

const FIRST_PAYMENT_ID = 100_001

/** At most this many records in one answer of the transactions search (see docs/emulator.md). */
export const MAX_SEARCH_RESULTS = 100

export class EmulatorState {
  setup: Setup
  /** The payments and their lookups (payment-index.ts); replaced whole on reset and restore. */
  private index: PaymentIndex
  /** Payment sessions (beta), created by POST /apis/payments, by slug; see api-session.ts. */
  private sessionsBySlug = new Map<string, PaymentSession>()
  /** The running server's {base_url}; the addresses in records and results are built from it. */
  baseUrl = ''
  /**
   * Strict mode refuses what the spec's strict reading refuses; otherwise what the real service is seen to
   * accept is accepted with a warning in `warnings` (docs/emulator.md).
   */
  strict = false
  readonly warnings = new WarningLog()
  private nextPaymentId = FIRST_PAYMENT_ID
  private readonly seed: Setup

  constructor(
    setup: Setup,
    readonly now: () => Date = () => new Date(),
    private readonly onChange: (state: EmulatorState) => void = () => {},
  ) {
    this.seed = structuredClone(setup)
    this.setup = structuredClone(setup)
    this.index = this.emptyIndex()
  }

  /** Every payment, in creation order. */
  get payments(): readonly PaymentRecord[] {
    return this.index.all
  }

  /** Every payment session, in creation order. */
  get sessions(): readonly PaymentSession[] {
    return [...this.sessionsBySlug.values()]
  }

  session(slug: string): PaymentSession | undefined {
    return this.sessionsBySlug.get(slug)
  }

  private emptyIndex(): PaymentIndex {
    return new PaymentIndex((record) => this.scopesOf(record))
  }

  /** The transactions lists a payment appears in: its merchant's, and the partner's whose partner_uid it carries. */
  private scopesOf(record: PaymentRecord): Scope[] {
    const partner = record.partnerUid === null ? undefined : this.partnerByPartnerUid(record.partnerUid)
    return partner === undefined ? [`merchant:${record.merchantId}`] : [`merchant:${record.merchantId}`, `partner:${partner.id}`]
  }

  /** Basic auth: any credential set of any merchant or partner, the Auth Token compared in constant time. */
  authenticate(uid: string, authToken: string): Principal | undefined {
    for (const merchant of this.setup.merchants)
      for (const credential of merchant.credentials)
        if (credential.uid === uid && sameText(credential.authToken, authToken)) return { kind: 'merchant', merchant, credential }
    for (const partner of this.setup.partners)
      for (const credential of partner.credentials)
        if (credential.uid === uid && sameText(credential.authToken, authToken)) return { kind: 'partner', partner, credential }
    return undefined
  }

  /** Payment creation identifies the merchant by the Auth Token alone (spec, Authentication 2 and 5). */
  merchantByAuthToken(authToken: string): { merchant: Merchant; credential: CredentialSet } | undefined {
    let found: { merchant: Merchant; credential: CredentialSet } | undefined
    for (const merchant of this.setup.merchants)
      for (const credential of merchant.credentials) if (sameText(credential.authToken, authToken)) found ??= { merchant, credential }
    return found
  }

  partnerByPartnerUid(partnerUid: string): Partner | undefined {
    return this.setup.partners.find((partner) => partner.partnerUids.includes(partnerUid))
  }

  /**
   * What the bank lists say in VerifySign. A tester turns it off (control API) to check that a client discards
   * lists the service could not vouch for, as the spec requires.
   */
  bankListsVerified = true

  banks(model: Model): Bank[] {
    return model === 'B2C' ? this.setup.banks.b2c : this.setup.banks.b2b1
  }

  payment(exchangeNumber: string): PaymentRecord | undefined {
    return this.index.byExchange(exchangeNumber)
  }

  paymentByReference(merchantReferenceNumber: string): PaymentRecord | undefined {
    return this.index.byReference(merchantReferenceNumber)
  }

  /** Every attempt at an order number, whichever merchant made it, oldest first. */
  attempts(orderNumber: string): readonly PaymentRecord[] {
    return this.index.attempts(orderNumber)
  }

  /** Whether a principal may read a payment: a merchant its own, a partner those created with its partner_uids. */
  canRead(principal: Principal, record: PaymentRecord): boolean {
    if (principal.kind === 'merchant') return record.merchantId === principal.merchant.id
    return record.partnerUid !== null && principal.partner.partnerUids.includes(record.partnerUid)
  }

  /** The newest attempt at an order number that the principal may read. */
  latestAttempt(principal: Principal, orderNumber: string): PaymentRecord | undefined {
    let latest: PaymentRecord | undefined
    for (const record of this.index.attempts(orderNumber))
      if (this.canRead(principal, record) && (latest === undefined || olderFirst(latest, record) < 0)) latest = record
    return latest
  }

  /**
   * The transactions search: the payments the principal may read whose reference of the chosen kind is `value`,
   * newest first, at most MAX_SEARCH_RESULTS; `total` counts them all.
   */
  search(principal: Principal, kind: 'order_number' | 'exchange_number' | 'fpx_ref_number', value: string): { total: number; records: PaymentRecord[] } {
    const exchange = kind === 'exchange_number' ? this.index.byExchange(value) : undefined
    const candidates = kind === 'order_number' ? this.index.attempts(value) : kind === 'fpx_ref_number' ? this.index.byBank(value) : exchange === undefined ? [] : [exchange]
    const found = candidates.filter((record) => this.canRead(principal, record)).sort((a, b) => olderFirst(b, a))
    return { total: found.length, records: found.slice(0, MAX_SEARCH_RESULTS) }
  }

  /** One page of the principal's transactions list (GET /v1/transactions/list), newest first. */
  listPage(principal: Principal, query: ListQuery): ListPage {
    const scope: Scope = principal.kind === 'merchant' ? `merchant:${principal.merchant.id}` : `partner:${principal.partner.id}`
    return this.index.page(scope, query)
  }

  addPayment(input: NewPayment): PaymentRecord {
    const now = this.now()
    // The service issues one reference and answers it as both exchange_number and merchant_reference_number.
    const reference = uniqueReference(now, (value) => this.index.referenceTaken(value))
    const record: PaymentRecord = {
      ...input,
      paymentId: this.nextPaymentId++,
      exchangeNumber: reference,
      merchantReferenceNumber: reference,
      createdAt: now.toISOString(),
      paymentStatus: false,
      paymentStage: 'payment_pending',
      bank: null,
    }
    this.index.add(record)
    this.onChange(this)
    return record
  }

  /** A payment-session slug in the service's form (five capital letters and Unix seconds), unused so far. */
  newSessionSlug(): string {
    return uniqueReference(this.now(), (value) => this.sessionsBySlug.has(value))
  }

  /**
   * Records the bank's answer. A payment takes one final answer; a B2B1 payment pending approval (99) may still
   * be approved or rejected by the corporate approver.
   */
  complete(exchangeNumber: string, outcome: CompletionOutcome, bankCode?: string): PaymentRecord {
    const record = this.payment(exchangeNumber)
    if (record === undefined) throw new ApiError(404, 'not_found', `no payment with exchange_number ${exchangeNumber}`)
    const pendingApproval = record.bank?.debitAuthCode === '99'
    if (record.bank !== null && !pendingApproval) throw new ApiError(409, 'conflict', 'the payment already has its final result')
    if (outcome === 'pending' && record.model !== 'B2B1')
      throw new ApiError(409, 'conflict', 'only a B2B1 payment can wait for corporate approval')
    if (outcome === 'pending' && pendingApproval) throw new ApiError(409, 'conflict', 'the payment is already pending approval')
    if (outcome === 'cancel' && pendingApproval) throw new ApiError(409, 'conflict', 'the buyer has left the bank; approve or reject')
    const code = bankCode ?? record.bank?.bankCode ?? record.buyerBankCode ?? this.firstOnlineBank(record.model)?.code
    const bank = this.banks(record.model).find((candidate) => candidate.code === code)
    if (bank === undefined) throw new ApiError(422, 'invalid_parameters', 'unknown bank', { bank_code: `no ${record.model} bank with this code` })
    const answer = BANK_ANSWERS[outcome]
    const wasPaid = record.paymentStatus
    const hadBankReference = record.bank !== null
    const now = this.now()
    const result: BankResult = {
      debitAuthCode: answer.code,
      statusMessage: answer.message,
      fpxStatus: answer.fpxStatus,
      bankCode: bank.code,
      bankName: bank.name,
      fpxName: record.buyerName.toUpperCase(),
      transactionId: record.bank?.transactionId ?? fpxTime(now).slice(2, 8) + randomDigits(10),
      transactionTime: fpxTime(now),
    }
    record.bank = result
    record.paymentStatus = outcome === 'approve'
    record.paymentStage = outcome === 'approve' ? 'payment_successful' : outcome === 'pending' ? 'payment_pending' : 'payment_unsuccessful'
    this.index.completed(record, wasPaid, hadBankReference)
    this.onChange(this)
    return record
  }

  private firstOnlineBank(model: Model): Bank | undefined {
    return this.banks(model).find((bank) => bank.status === 'online')
  }

  /** The merchant and credential set behind a record, for building its views. */
  contextOf(record: PaymentRecord): RecordContext {
    const merchant = this.setup.merchants.find((candidate) => candidate.id === record.merchantId)
    const credential = merchant?.credentials.find((set) => set.uid === record.credentialUid)
    if (merchant === undefined || credential === undefined) throw new Error(`payment ${record.exchangeNumber} refers to a removed credential set`)
    return { baseUrl: this.baseUrl, merchant, credential }
  }

  /**
   * The signed fields the service posts to redirect_url and callback_url for the payment's current state,
   * signed with the Checksum Token of the credential set that created it.
   */
  resultFields(record: PaymentRecord): Record<string, FieldInput> {
    const context = this.contextOf(record)
    const fields = resultFieldsOf(record, context, this.setup.includeTokenInResults)
    return { ...fields, checksum: messageChecksum(fields, context.credential.checksumToken) }
  }

  /** Keeps a payment session: saved with the state like a payment. */
  addSession(session: PaymentSession): void {
    this.sessionsBySlug.set(session.slug, session)
    this.onChange(this)
  }

  /** For changes made to a record or session in place, so the state file follows. */
  changed(): void {
    this.onChange(this)
  }

  /** Back to the configured merchants, partners and banks, with no payments. */
  reset(): void {
    this.bankListsVerified = true
    this.setup = structuredClone(this.seed)
    this.index = this.emptyIndex()
    this.sessionsBySlug = new Map()
    this.nextPaymentId = FIRST_PAYMENT_ID
    this.warnings.clear()
    this.onChange(this)
  }

  toJSON(): Snapshot {
    return { version: 1, setup: this.setup, payments: this.index.all, nextPaymentId: this.nextPaymentId, sessions: this.sessions }
  }

  /** Restores a snapshot written by saveState (the seed for reset stays the configured one). */
  restore(snapshot: unknown): void {
    const value = snapshot as Partial<Snapshot> | null
    if (value?.version !== 1 || value.setup === undefined || !Array.isArray(value.payments) || typeof value.nextPaymentId !== 'number')
      throw new TypeError('the emulator state file is not a version 1 snapshot')
    this.setup = value.setup
    // The lists' scopes read the restored setup's partners, so the index is built after it is in place.
    this.index = this.emptyIndex()
    for (const record of value.payments) this.index.add(record)
    this.nextPaymentId = value.nextPaymentId
    this.sessionsBySlug = new Map((value.sessions ?? []).map((session) => [session.slug, session]))
  }
}

/** Writes the state as JSON, atomically, so a crash never leaves half a file. The file holds credentials: keep it local. */
export function saveState(state: EmulatorState, file: string): void {
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
  renameSync(temporary, file)
}

/** Loads a saved state into `state` when the file exists; returns whether it did. */
export function loadState(state: EmulatorState, file: string): boolean {
  if (!existsSync(file)) return false
  const text = readFileSync(file, 'utf8')
  let snapshot: unknown
  try {
    snapshot = JSON.parse(text)
  } catch (error) {
    // Never JSON.parse's message, nor the error as a cause (printed with it): it quotes the file, which holds credentials.
    const place = jsonErrorPlace(text, error)
    // eslint-disable-next-line preserve-caught-error -- the cause would carry the quoted text
    throw new TypeError(`the emulator state file ${file} is not valid JSON${place === undefined ? '' : ` (${place})`}`)
  }
  state.restore(snapshot)
  return true
}
