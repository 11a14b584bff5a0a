import { type FieldErrors, invalidParameters } from './errors.js'
import type { Context } from './http.js'

/**
 * Pages of the control API's lists (payments, deliveries): `page` from 1 and `per_page` up to a hard maximum, so
 * no answer grows with what the emulator holds. Oldest first, as the lists were before they had pages.
 */
export const CONTROL_PER_PAGE = 100
export const CONTROL_MAX_PER_PAGE = 1000

export interface PageRequest {
  readonly page: number
  readonly perPage: number
}

function wholeNumber(text: string | null, fallback: number, max: number): number | undefined {
  if (text === null) return fallback
  const value = /^\d{1,9}$/.test(text) ? Number(text) : 0
  return value >= 1 && value <= max ? value : undefined
}

export function readPage(context: Context): PageRequest {
  const query = context.url.searchParams
  const page = wholeNumber(query.get('page'), 1, 999_999_999)
  const perPage = wholeNumber(query.get('per_page'), CONTROL_PER_PAGE, CONTROL_MAX_PER_PAGE)
  const problems: FieldErrors = {}
  if (page === undefined) problems.page = 'must be a whole number from 1'
  if (perPage === undefined) problems.per_page = `must be a whole number from 1 to ${CONTROL_MAX_PER_PAGE}`
  if (page === undefined || perPage === undefined) throw invalidParameters(problems)
  return { page, perPage }
}

/** The page's items under `name`, with where the page stands among all of them. */
export function pageOf<T>(name: string, items: readonly T[], request: PageRequest, view: (item: T) => unknown): Record<string, unknown> {
  const offset = (request.page - 1) * request.perPage
  return {
    [name]: items.slice(offset, offset + request.perPage).map(view),
    page: request.page,
    per_page: request.perPage,
    total_entries: items.length,
    next_page: offset + request.perPage < items.length ? request.page + 1 : null,
  }
}
