import type { ClientContext } from './context.js'
import { FpxApiError } from './errors.js'
import {
  readOutput,
  searchInputSchema,
  type SearchReference,
  type Transaction,
  type TransactionsPage,
  type TransactionsQuery,
  transactionSchema,
  transactionsPageSchema,
  transactionsQuerySchema,
  validate,
} from './schemas.js'

function queryText(query: TransactionsQuery): Record<string, string | undefined> {
  const valid = validate(transactionsQuerySchema, query, 'transactions')
  return {
    per_page: valid.per_page === undefined ? undefined : String(valid.per_page),
    page: valid.page === undefined ? undefined : String(valid.page),
    payment_status: valid.payment_status === undefined ? undefined : String(valid.payment_status),
    start_date: valid.start_date,
    end_date: valid.end_date,
  }
}

/** GET /v1/transactions/list: one page. The service's defaults apply to what is left out (success only, 10 a page). */
export async function transactionsPage(context: ClientContext, query: TransactionsQuery = {}): Promise<TransactionsPage> {
  const what = 'GET /v1/transactions/list'
  const answer = await context.http.send({ method: 'GET', path: '/v1/transactions/list', query: queryText(query), basicAuth: true, retry: true })
  return readOutput(transactionsPageSchema, context.http.json(what, answer), what, answer.status)
}

/**
 * Every transaction of the query, page after page (100 a page unless `per_page` says otherwise), from `page`
 * or 1. The list is newest first: a payment created during the walk shifts the pages, so an entry may be seen
 * twice; consumers that must not double-count deduplicate by exchange_number (reconcile does).
 */
export async function* allTransactions(context: ClientContext, query: Omit<TransactionsQuery, 'page'> & { page?: number } = {}): AsyncGenerator<Transaction> {
  let page = query.page ?? 1
  const perPage = query.per_page ?? 100
  for (;;) {
    const answer = await transactionsPage(context, { ...query, per_page: perPage, page })
    yield* answer.transactions
    if (answer.next_page === null) return
    // A next_page that does not move forward would loop for ever.
    if (answer.next_page <= page)
      throw new FpxApiError(`GET /v1/transactions/list answered next_page ${answer.next_page} on page ${page}`, 200, answer)
    page = answer.next_page
  }
}

/** GET /v1/transactions/search: every record whose chosen reference has that value (possibly several, or none). */
export async function searchTransactions(context: ClientContext, reference: SearchReference, value: string): Promise<Transaction[]> {
  const valid = validate(searchInputSchema, { search_reference: reference, reference_number: value }, 'searchTransactions')
  const what = 'GET /v1/transactions/search'
  const answer = await context.http.send({ method: 'GET', path: '/v1/transactions/search', query: valid, basicAuth: true, retry: true })
  return readOutput(transactionSchema.array(), context.http.json(what, answer), what, answer.status)
}
