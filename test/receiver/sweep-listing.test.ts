import { describe, expect, it } from 'vitest'
import { CLOCK_MARGIN_MS, listSuccesses, listWindow, successesOf } from '../../src/receiver/sweep-listing.js'
import type { SuccessesQuery } from '../../src/receiver/sweep-options.js'

/*
 * The transactions list as the sweeper walks it. The emulator lists newest first (its tests and the sweeper's run
 * against it); the spec does not say which order the real list has, so the other order is walked here against a
 * list that pages a plain array the way the spec's pagination object says.
 */

const MINUTE = 60_000
const NOW = Date.parse('2026-11-28T03:00:00Z') // 11:00 in Malaysia

/** `count` successes, one a minute up to NOW, each with its order number and creation time. */
function successes(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    order_number: `ORD-${i}`,
    payment_status: true,
    interface_uid: 'uid-1',
    created_at: new Date(NOW - (count - 1 - i) * MINUTE).toISOString(),
  }))
}

/** The spec's pagination object over `records` in the order given. */
function pagedList(records: Record<string, unknown>[]) {
  const asked: number[] = []
  return {
    asked,
    client: {
      async transactions(query: SuccessesQuery) {
        asked.push(query.page)
        const total = Math.ceil(records.length / query.per_page)
        const page = records.slice((query.page - 1) * query.per_page, query.page * query.per_page)
        return { transactions: page, next_page: query.page < total ? query.page + 1 : null, total_page: total }
      },
    },
  }
}

async function walk(records: Record<string, unknown>[], since: Date, turns = Infinity) {
  const list = pagedList(records)
  const seen: string[] = []
  let left = turns
  await listSuccesses(list.client, since, {
    turn: async () => left-- > 0,
    page: async (page) => void seen.push(...page.map((record) => record.order_number as string)),
  })
  return { asked: list.asked, seen }
}

describe('the sweeper’s walk of the transactions list', () => {
  const all = successes(450) // 7.5 hours of one a minute: 5 pages of 100
  const since = new Date(NOW - 3 * 60 * MINUTE) // the oldest open payment: 3 hours ago

  it('newest first: from page 1 on, until a page older than the oldest open payment (less the clock margin)', async () => {
    const { asked, seen } = await walk([...all].reverse(), since)
    // 3 hours and the hour's margin: 240 minutes, on pages 1-3 (minutes 0-299 before now); page 4 is not asked.
    expect(asked).toEqual([1, 2, 3])
    expect(seen).toContain('ORD-449')
    expect(seen).toContain(`ORD-${449 - (3 * 60 + CLOCK_MARGIN_MS / MINUTE)}`)
  })

  it('oldest first: page 1, then from the last page back, until the same', async () => {
    const { asked, seen } = await walk(all, since)
    expect(asked).toEqual([1, 5, 4, 3])
    expect(seen.slice(100, 150)).toEqual(all.slice(400).map((record) => record.order_number))
    const recent = await walk(all, new Date(NOW - 30 * MINUTE))
    // Page 4 (minutes 50-149 before now) reaches past 30 minutes and the margin: the walk back stops there.
    expect(recent.asked).toEqual([1, 5, 4])
  })

  it('stops when no turn is given (the page budget spent, the lock lost)', async () => {
    expect((await walk([...all].reverse(), new Date(0), 2)).asked).toEqual([1, 2])
    expect((await walk(all, new Date(0), 2)).asked).toEqual([1, 5])
  })

  it('asks for Malaysian dates, at most the 90 days the spec allows', () => {
    const now = new Date('2026-11-28T17:30:00Z') // already the 29th in Malaysia
    expect(listWindow(new Date('2026-11-28T16:30:00Z'), now)).toEqual({ start_date: '2026-11-28', end_date: '2026-11-29' })
    expect(listWindow(new Date('2026-11-28T17:00:00Z'), now)).toEqual({ start_date: '2026-11-29', end_date: '2026-11-29' })
    // An open payment older than the window: the 90 days up to today, both counted.
    expect(listWindow(new Date('2025-01-01T00:00:00Z'), now)).toEqual({ start_date: '2026-09-01', end_date: '2026-11-29' })
  })

  it('keeps the successes of the credential set that lists them, by order', () => {
    const found = successesOf(
      [
        { order_number: 'A', payment_status: true, interface_uid: 'uid-1', exchange_number: 'X1' },
        { order_number: 'A', payment_status: true, interface_uid: 'uid-1', exchange_number: 'X2' },
        { order_number: 'B', payment_status: true, interface_uid: 'uid-2' },
        { order_number: 'C', payment_status: false, interface_uid: 'uid-1' },
        { order_number: 'D', payment_status: true },
        { order_number: '', payment_status: true },
      ],
      'uid-1',
    )
    expect([...found].map(([order, records]) => [order, records.length])).toEqual([
      ['A', 2],
      ['D', 1],
    ])
  })
})
