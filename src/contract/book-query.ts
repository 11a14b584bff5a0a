/*
 * The operator's questions to the payment book (PaymentBook.list and overview), checked and answered the same way
 * by every store: what a query means, the order of a page, its cursor, and the overview's hours and age bands.
 */
import { type PaymentState, STATE_RANK } from '../core/payment.js'
import {
  type BookedPayment,
  type BookOverview,
  type BookStatus,
  type HourCounts,
  type ListQuery,
  type ListStatus,
  MAX_FAILURE_MESSAGE,
  type OverviewWindow,
  type PaymentPage,
} from './payment-book.js'

export const DEFAULT_LIST_LIMIT = 50
export const MAX_LIST_LIMIT = 100
/** The longest overview window: its hours are counted one by one. */
export const MAX_OVERVIEW_DAYS = 366
export const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

export const BOOK_STATUSES: readonly BookStatus[] = ['open', 'succeeded', 'failed', 'abandoned']
export const LIST_STATUSES: readonly ListStatus[] = [...BOOK_STATUSES, 'paid_failing']

/** A payment's place in the newest-first order, and what a cursor holds: the last payment of a page. */
export interface Position {
  readonly createdAt: number
  readonly orderNumber: string
  readonly uid: string
}

/** A ListQuery checked: times as epoch milliseconds, the search term folded (emailKey), the cursor read. */
export interface CheckedList {
  readonly status: ListStatus | undefined
  readonly from: number | undefined
  readonly to: number | undefined
  readonly search: string | undefined
  /** The search term as an e-mail is compared (emailKey). */
  readonly searchEmail: string | undefined
  readonly limit: number
  readonly after: Position | undefined
}

const validDate = (value: unknown): value is Date => value instanceof Date && Number.isFinite(value.getTime())

/** An e-mail as the book compares it: ASCII letters lower-cased (the same in JavaScript, Lua and SQL's "C" lower()). */
export const emailKey = (email: string): string => email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())

function base64url(text: string): string {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function fromBase64url(text: string): string {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)))
}

/** The cursor of the page after `payment`. */
export function cursorAfter(payment: BookedPayment): string {
  return base64url(JSON.stringify([payment.createdAt.getTime(), payment.orderNumber, payment.uid]))
}

function positionOf(cursor: string): Position {
  try {
    const [createdAt, orderNumber, uid] = JSON.parse(fromBase64url(cursor)) as unknown[]
    if (Number.isSafeInteger(createdAt) && typeof orderNumber === 'string' && typeof uid === 'string') return { createdAt: createdAt as number, orderNumber, uid }
  } catch {
    // Reported below, as any cursor that is not one of ours.
  }
  throw new TypeError('cursor must be the `next` of an earlier page')
}

/** Checks a ListQuery; TypeError naming what is wrong. Every store lists through it. */
export function listQuery(query: ListQuery | undefined): CheckedList {
  const { status, from, to, search, cursor } = query ?? {}
  const limit = query?.limit ?? DEFAULT_LIST_LIMIT
  if (status !== undefined && !LIST_STATUSES.includes(status)) throw new TypeError(`status must be one of ${LIST_STATUSES.join(', ')}`)
  if (!(Number.isInteger(limit) && limit > 0 && limit <= MAX_LIST_LIMIT)) throw new TypeError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`)
  if (from !== undefined && !validDate(from)) throw new TypeError('from must be a valid Date')
  if (to !== undefined && !validDate(to)) throw new TypeError('to must be a valid Date')
  if (search !== undefined && (typeof search !== 'string' || search === '')) throw new TypeError('search must be non-empty text')
  if (cursor !== undefined && typeof cursor !== 'string') throw new TypeError('cursor must be the `next` of an earlier page')
  return {
    status,
    from: from?.getTime(),
    to: to?.getTime(),
    search,
    searchEmail: search === undefined ? undefined : emailKey(search),
    limit,
    after: cursor === undefined ? undefined : positionOf(cursor),
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Newest created first, then by order_number, then by uid, both descending: every store's page order. */
export function byNewest(a: BookedPayment, b: BookedPayment): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || compare(b.orderNumber, a.orderNumber) || compare(b.uid, a.uid)
}

/** Whether a payment comes after a cursor's position in page order. */
function after(position: Position, payment: BookedPayment): boolean {
  const created = payment.createdAt.getTime()
  return created < position.createdAt || (created === position.createdAt && (compare(payment.orderNumber, position.orderNumber) || compare(payment.uid, position.uid)) < 0)
}

/** A success whose handlers failed and that is not handled yet. */
export const isPaidFailing = (payment: Pick<BookedPayment, 'failures' | 'lastFailure'>): boolean => payment.failures > 0 && payment.lastFailure?.state === 'succeeded'

/** Whether a payment answers the query (what a store that scans checks; the others ask their indexes the same). */
export function matchesList(payment: BookedPayment, query: CheckedList): boolean {
  const created = payment.createdAt.getTime()
  const term = query.search
  return (
    (query.status === undefined || (query.status === 'paid_failing' ? isPaidFailing(payment) : payment.status === query.status)) &&
    (query.from === undefined || created >= query.from) &&
    (query.to === undefined || created < query.to) &&
    (term === undefined ||
      payment.orderNumber === term ||
      payment.exchangeNumber === term ||
      (payment.buyerEmail !== null && emailKey(payment.buyerEmail) === query.searchEmail)) &&
    (query.after === undefined || after(query.after, payment))
  )
}

/** A page from the matching payments in page order, at most limit + 1 of them (one more says there is a next page). */
export function pageOf(ordered: readonly BookedPayment[], limit: number): PaymentPage {
  const payments = ordered.slice(0, limit)
  const last = payments.at(-1)
  return { payments, next: ordered.length > limit && last !== undefined ? cursorAfter(last) : null }
}

/**
 * Whether handling `handled` clears the failures counted so far: those of its rank or lower. A handled success
 * clears all; a 99 handled while a success keeps failing clears nothing.
 */
export function clearsFailures(handled: PaymentState, failedState: PaymentState | null): boolean {
  return failedState === null || STATE_RANK[handled] >= STATE_RANK[failedState]
}

/** A handler's message as the book keeps it: one line, at most MAX_FAILURE_MESSAGE characters. */
export function failureText(message: string): string {
  const line = String(message).replace(/\s+/g, ' ').trim()
  return line.length <= MAX_FAILURE_MESSAGE ? line : `${line.slice(0, MAX_FAILURE_MESSAGE - 1)}…`
}

/** An overview window checked: epoch milliseconds, from before to, at most MAX_OVERVIEW_DAYS. TypeError otherwise. */
export function overviewWindow(window: OverviewWindow | undefined): { readonly from: number; readonly to: number } {
  if (!validDate(window?.from) || !validDate(window?.to)) throw new TypeError('the overview needs a window { from, to } of valid Dates')
  const [from, to] = [window.from.getTime(), window.to.getTime()]
  if (!(from < to && to - from <= MAX_OVERVIEW_DAYS * DAY_MS)) throw new TypeError(`the overview's window must end after it starts, at most ${MAX_OVERVIEW_DAYS} days later`)
  return { from, to }
}

/** The start of every UTC hour that overlaps the window, oldest first. */
export function hoursOf(window: { readonly from: number; readonly to: number }): number[] {
  const hours: number[] = []
  for (let hour = Math.floor(window.from / HOUR_MS) * HOUR_MS; hour < window.to; hour += HOUR_MS) hours.push(hour)
  return hours
}

/** One store's count of results settled in an hour (its start, ms) in a state. */
export interface SettledCount {
  readonly hour: number
  readonly state: PaymentState
  readonly count: number
}

/** Every hour of the window with its counts, zeros included. */
export function perHour(window: { readonly from: number; readonly to: number }, counts: readonly SettledCount[]): HourCounts[] {
  const found = new Map(counts.map((count) => [`${count.hour}:${count.state}`, count.count]))
  const of = (hour: number, state: PaymentState) => found.get(`${hour}:${state}`) ?? 0
  return hoursOf(window).map((hour) => ({ hour: new Date(hour), succeeded: of(hour, 'succeeded'), failed: of(hour, 'failed'), pending: of(hour, 'pending') }))
}

/** The creation times that part open payments by age at `now`: younger than an hour, a day, a week. */
export function ageBounds(now: number): { readonly hour: number; readonly day: number; readonly week: number } {
  return { hour: now - HOUR_MS, day: now - DAY_MS, week: now - 7 * DAY_MS }
}

/** Counts open payments into the overview's age bands, by their creation times (ms). */
export function openByAge(createdAt: readonly number[], now: number): BookOverview['openByAge'] {
  const bounds = ageBounds(now)
  const bands = { underHour: 0, underDay: 0, underWeek: 0, older: 0 }
  for (const at of createdAt) {
    if (at > bounds.hour) bands.underHour++
    else if (at > bounds.day) bands.underDay++
    else if (at > bounds.week) bands.underWeek++
    else bands.older++
  }
  return bands
}

export const noStatuses = (): Record<BookStatus, number> => ({ open: 0, succeeded: 0, failed: 0, abandoned: 0 })
