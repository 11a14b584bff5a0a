import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createReceiver, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../client/helpers.js'
import { uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { type CliResult, runCli } from './run.js'
import { cliStores } from './stores.js'

const available = (await serviceAvailable('PostgreSQL', DATABASE_URL)) && (await serviceAvailable('Redis', REDIS_URL))

const FORM = 'application/x-www-form-urlencoded'
const HOUR = 3_600_000
/** A time as the CLI prints it by default: Malaysia time, its offset written out. */
const MALAYSIA_TIME = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+08:00/

const lines = (result: CliResult) => result.stdout.trim().split('\n')
const firstWords = (result: CliResult) => lines(result).map((line) => line.split('  ')[0])

describe('fpx-collect payments list and show, timeline: usage', { timeout: 60_000 }, () => {
  it('refuses what it cannot use before touching a store', async () => {
    const where = ['--url', 'redis://127.0.0.1:1']
    const [badFrom, badOffset, badLimit, showFlag, noTarget, bothStatuses, help] = await Promise.all([
      runCli(['payments', 'list', '--from', 'yesterday', ...where]),
      runCli(['payments', 'list', '--utc-offset', '+25:00', ...where]),
      runCli(['payments', 'list', '--limit', '101', ...where]),
      runCli(['payments', 'show', 'ORD-1', '--status', 'open', ...where]),
      runCli(['timeline', ...where]),
      runCli(['payments', 'list', '--open', '--status', 'failed', ...where]),
      runCli(['timeline', '--help']),
    ])
    expect(badFrom).toMatchObject({ code: 2, stderr: expect.stringContaining('--from takes a date') })
    expect(badOffset).toMatchObject({ code: 2, stderr: expect.stringContaining('--utc-offset') })
    expect(badLimit).toMatchObject({ code: 2, stderr: expect.stringContaining('--limit must be an integer from 1 to 100') })
    expect(showFlag).toMatchObject({ code: 2, stderr: expect.stringContaining('--status goes with list') })
    expect(noTarget).toMatchObject({ code: 2, stderr: expect.stringContaining('an order_number or an exchange_number') })
    expect(bothStatuses).toMatchObject({ code: 2, stderr: expect.stringContaining('--open is --status open') })
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining('fpx-collect timeline <order_number | exchange_number>') })
  })
})

describe.skipIf(!available)('fpx-collect payments list and show, timeline: against the stores', { timeout: 120_000 }, () => {
  const { pool, cases } = cliStores('list')

  /**
   * A shop's day in the store: OLD recorded 3 hours ago and still open, PAID recorded and paid, SEEN paid but never
   * recorded by the client, FAILING paid but its handler throws, UNHANDLED a failure no handler took (its timeline
   * only). Returns their order numbers and exchange numbers.
   */
  async function day(receiver: Receiver<unknown>) {
    const tag = randomUUID().slice(0, 8)
    const order = (name: string) => `${name}-${tag}`
    const email = `Buyer.${tag}@Example.com`
    for (const [name, ageMs] of [['OLD', 3 * HOUR], ['PAID', HOUR], ['FAILING', 30 * 60_000]] as const)
      await receiver.payments.record({ orderNumber: order(name), amountSen: 10_020, uid: DEMO.uid, kind: 'form', createdAt: new Date(Date.now() - ageMs), exchangeNumber: null, attached: { cart: name }, buyerEmail: email })
    const exchange = (name: string) => `EX-${name}-${tag}`
    const result = (name: string, status = 'true') =>
      signCallback(samplePaymentFields({ order_number: order(name), exchange_number: exchange(name), payment_status: status, transaction_amount: '100.20', uid: DEMO.uid }), DEMO.checksumToken).body
    receiver.on('payment.succeeded', (event) => {
      if (event.payment.orderNumber.startsWith('FAILING-')) throw new Error('the warehouse API timed out')
    })
    for (const name of ['PAID', 'SEEN']) expect((await receiver.handle({ kind: 'callback', body: result(name), contentType: FORM })).outcome).toBe('processed')
    expect((await receiver.handle({ kind: 'callback', body: result('FAILING'), contentType: FORM })).outcome).toBe('failed')
    expect((await receiver.handle({ kind: 'callback', body: result('UNHANDLED', 'false'), contentType: FORM })).outcome).toBe('failed')
    await receiver.flush()
    return { order, exchange, email }
  }

  for (const [name, store, where] of cases)
    it(`${name}: lists any status and window a page at a time, shows any payment seen, prints its timeline`, async () => {
      const receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: store(), sweep: false, logger: false as never })
      const { order, exchange, email } = await day(receiver)
      await receiver.close()
      const cli = (...args: string[]) => runCli([...args, ...where])
      const [all, failing, paid, recent, byEmail, page, json, seen, unhandled, missing, utc, timeline, byExchange, nothing] = await Promise.all([
        cli('payments', 'list', '--search', email),
        cli('payments', 'list', '--status', 'paid_failing', '--search', email),
        cli('payments', 'list', '--status', 'succeeded', '--from', '2h'),
        cli('payments', 'list', '--from', '2h', '--search', email),
        cli('payments', 'list', '--search', email.toUpperCase()),
        cli('payments', 'list', '--search', email, '--limit', '2'),
        cli('payments', 'list', '--search', email, '--limit', '2', '--json'),
        cli('payments', 'show', exchange('SEEN')),
        cli('payments', 'show', order('UNHANDLED')),
        cli('payments', 'show', `NOT-${randomUUID()}`),
        cli('payments', 'show', order('FAILING'), '--utc-offset', 'UTC'),
        cli('timeline', order('PAID')),
        cli('timeline', exchange('SEEN')),
        cli('timeline', `NOT-${randomUUID()}`),
      ])
      expect(all).toMatchObject({ code: 0, stderr: '' })
      expect(firstWords(all)).toEqual([order('FAILING'), order('PAID'), order('OLD'), '3 shown'])
      expect(failing.stdout).toMatch(new RegExp(`^${order('FAILING')}  PAID, HANDLER FAILING \\(open\\)  age 30m  amount 100.20  form  exchange -  buyer ${email.replace(/\./g, '\\.')}  failures 1  `))
      expect(firstWords(failing)).toEqual([order('FAILING'), '1 shown'])
      // Succeeded in the last two hours: the recorded payment and the one first seen in its result.
      expect(firstWords(paid).slice(0, -1).sort()).toEqual([order('PAID'), order('SEEN')].sort())
      expect(lines(paid).find((line) => line.startsWith(order('SEEN')))).toContain(`  succeeded  age `)
      expect(firstWords(recent)).toEqual([order('FAILING'), order('PAID'), '2 shown'])
      expect(firstWords(byEmail)).toEqual(firstWords(all))
      // A page at a time: the last line gives the next page's cursor.
      expect(firstWords(page).slice(0, 3)).toEqual([order('FAILING'), order('PAID'), '2 shown'])
      const cursor = /^more: --cursor (\S+)$/.exec(lines(page).at(-1) as string)?.[1] as string
      expect(JSON.parse(json.stdout).next).toBe(cursor)
      const next = await cli('payments', 'list', '--search', email, '--limit', '2', '--cursor', cursor)
      expect(firstWords(next)).toEqual([order('OLD'), '1 shown'])
      expect(await cli('payments', 'list', '--cursor', 'not-a-cursor')).toMatchObject({ code: 2, stderr: expect.stringContaining('cursor') })
      // Any payment seen: by exchange_number, one the client never recorded.
      expect(seen).toMatchObject({ code: 0 })
      expect(seen.stdout).toContain('(first seen in a verified result: not recorded by the client)')
      expect(seen.stdout).toMatch(new RegExp(`  ${MALAYSIA_TIME.source}  processed  callback  succeeded  answered 200  order ${order('SEEN')}  exchange ${exchange('SEEN')}`))
      // One only its timeline holds: no handler took its failure, so nothing was handled.
      expect(unhandled).toMatchObject({ code: 0, stdout: expect.stringContaining(`${order('UNHANDLED')} is not in the payment book; its timeline:`) })
      expect(unhandled.stdout).toContain('no_handler')
      expect(missing).toMatchObject({ code: 1, stdout: expect.stringContaining('is not in the payment book nor on any timeline') })
      // The handler's failure, in UTC when asked.
      expect(utc.stdout).toMatch(/handler failures 1; the last at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+00:00 handling succeeded: Error: the warehouse API timed out/)
      expect(utc.stdout).not.toMatch(/\+08:00/)
      // The timeline: created first (from the book), then the delivery, in Malaysia time.
      expect(timeline).toMatchObject({ code: 0 })
      expect(lines(timeline).map((line) => line.split('  ')[1])).toEqual(['created', 'received', 'verified', 'processed'])
      expect(lines(timeline).every((line) => MALAYSIA_TIME.test(line))).toBe(true)
      expect(lines(byExchange).map((line) => line.split('  ')[1])).toEqual(['received', 'verified', 'processed'])
      expect(nothing).toMatchObject({ code: 1, stdout: expect.stringContaining('nothing is kept for') })
    })

  it('PostgreSQL: a timeline asked of a database where the store never ran is reported, nothing created', async () => {
    const fresh = uniqueTable('none')
    const result = await runCli(['timeline', 'ORD-1', '--url', DATABASE_URL, '--table', fresh])
    expect(result).toMatchObject({ code: 1, stdout: expect.stringContaining('nothing is kept for ORD-1') })
    expect((await pool.query('SELECT to_regclass($1) AS found', [`${fresh}_timeline`])).rows[0].found).toBeNull()
  })
})
