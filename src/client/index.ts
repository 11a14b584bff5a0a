/**
 * The outbound client for the service's API: typed inputs checked before any request, zod-checked answers,
 * typed errors, retries of reads.
 * @module fpx-collect/client
 */
import { type BankList, type BankStatus, partnerBanks, publicBanks } from './banks.js'
import { Booking, type CreationOptions, recorderOf } from './booking.js'
import { type ClientOptions, resolveConfig } from './config.js'
import type { ClientContext } from './context.js'
import { validateCredentials } from './credentials.js'
import { HttpClient } from './http.js'
import { buildPaymentForm, type CreatedPayment, createPayment, type PaymentForm, type PaymentFormOptions } from './payments.js'
import type { CredentialResult, PaymentInput, PaymentSession, SearchReference, SessionInput, Transaction, TransactionsPage, TransactionsQuery } from './schemas.js'
import { createPaymentSession } from './sessions.js'
import { paymentStatus, paymentStatusByReference } from './status.js'
import { allTransactions, searchTransactions, transactionsPage } from './transactions.js'

export interface TransactionsMethod {
  /** One page of GET /v1/transactions/list. */
  (query?: TransactionsQuery): Promise<TransactionsPage>
  /** Every transaction, across all pages: `for await (const tx of client.transactions.all({ ... }))`. */
  all(query?: TransactionsQuery): AsyncGenerator<Transaction>
}

export interface FpxClient {
  readonly baseUrl: string
  /** The API UID this client authenticates with. */
  readonly uid: string
  validateCredentials(): Promise<CredentialResult>
  publicBanks(model: 'b2c' | 'b2b', options?: { status?: BankStatus }): Promise<BankList>
  partnerBanks(model: 'b2c' | 'b2b1', options?: { status?: BankStatus }): Promise<BankList>
  /**
   * The payment request as a form for the buyer's browser, with your API UID and Auth Token in it: pass
   * `{ exposeAuthToken: true }` to say you accept that. In production use createPayment (docs/client.md).
   */
  buildPaymentForm(input: PaymentInput, options: PaymentFormOptions): PaymentForm
  /** Creates the payment from your server; send the buyer to `nextUrl`. The production path. */
  createPayment(input: PaymentInput, options?: CreationOptions): Promise<CreatedPayment>
  createPaymentSession(input: SessionInput, options?: CreationOptions): Promise<PaymentSession>
  paymentStatus(orderNumber: string): Promise<Transaction>
  paymentStatusByReference(merchantReferenceNumber: string): Promise<Transaction>
  readonly transactions: TransactionsMethod
  searchTransactions(reference: SearchReference, value: string): Promise<Transaction[]>
}

export function createClient(options: ClientOptions): FpxClient {
  const config = resolveConfig(options)
  const recorder = options.book === undefined ? undefined : recorderOf(options.book)
  const context: ClientContext = { config, http: new HttpClient(config), booking: new Booking(recorder, config.uid, config.logger) }
  const transactions = Object.assign((query?: TransactionsQuery) => transactionsPage(context, query), {
    all: (query?: TransactionsQuery) => allTransactions(context, query),
  })
  return {
    baseUrl: config.baseUrl,
    uid: config.uid,
    validateCredentials: () => validateCredentials(context),
    publicBanks: (model, bankOptions) => publicBanks(context, model, bankOptions),
    partnerBanks: (model, bankOptions) => partnerBanks(context, model, bankOptions),
    buildPaymentForm: (input, creation) => buildPaymentForm(context, input, creation),
    createPayment: (input, creation) => createPayment(context, input, creation),
    createPaymentSession: (input, creation) => createPaymentSession(context, input, creation),
    paymentStatus: (orderNumber) => paymentStatus(context, orderNumber),
    paymentStatusByReference: (reference) => paymentStatusByReference(context, reference),
    transactions,
    searchTransactions: (reference, value) => searchTransactions(context, reference, value),
  }
}

export type { Bank, BankList, BankStatus } from './banks.js'
export type { CreationOptions, PaymentBookSource, PaymentRecorder } from './booking.js'
export { type ClientOptions, type EnvironmentName, ENVIRONMENTS } from './config.js'
export { FpxApiError, FpxAuthenticationError, FpxError, FpxNetworkError, FpxTimeoutError, FpxValidationError } from './errors.js'
export type { CreatedPayment, PaymentForm, PaymentFormOptions } from './payments.js'
export { paymentFormHtml, type PaymentFormHtmlOptions, type PaymentFormInput } from './payment-form-html.js'
export { reconcile, type ReconcileClient, type ReconcileOptions, type ReconcileReport } from './reconcile.js'
export type { CredentialResult, PaymentInput, PaymentSession, SearchReference, SessionInput, Transaction, TransactionsPage, TransactionsQuery } from './schemas.js'
