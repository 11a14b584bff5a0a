/**
 * The multi-process soak: N receiver processes share one store (Redis, or PostgreSQL in transactional mode)
 * while this driver plays the payment service: duplicates (some at the same moment to different processes),
 * callback and redirect of one result, B2B1 99/00 pairs (some out of order), handlers failing at random, and a
 * worker SIGKILLed mid-run and restarted. At the end the handlers' ledger must show every payment at its final
 * state, nothing lost, and no second run beyond what the store promises. Exits non-zero on any violation.
 *
 *   npx tsx soak/driver.ts [--store=redis|postgres|both] [--payments=10000] [--workers=4] [--kills=2] ...
 *   npx tsx soak/driver.ts --inbox [--outage-ms=140000] [--backoff-max-ms=5000] [--processed-within-periods=1]   (inbox mode, soak/inbox.ts)
 *
 * Every flag is also an environment variable (SOAK_STORE, SOAK_PAYMENTS, ...); see soak/config.ts.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { check, type Findings } from './checks.js'
import { drainInbox, type InboxFigures, inboxReport } from './inbox.js'
import { loadConfig, onEachStore, type SoakConfig, type StoreKind } from './config.js'
import { type PaymentPlan, planPayment } from './plan.js'
import { createResources, dropResources, ledgerRows, type RunResources, storeState } from './resources.js'
import { Sender } from './send.js'
import { Fleet, type Kill } from './workers.js'
import { PrivatePostgres, PrivateRedis } from './servers.js'

const n = (value: number) => value.toLocaleString('en-US')

/** What a run leaves to clean up if the driver is interrupted. */
let current: { fleet: Fleet; resources: RunResources; keep: boolean } | undefined

interface Traffic {
  b2b1: number
  outOfOrder: number
  deliveries: number
  byKind: { callback: number; redirect: number }
  duplicates: { concurrent: number; later: number }
}

function tally(traffic: Traffic, plan: PaymentPlan): void {
  if (plan.model === 'B2B1') traffic.b2b1++
  if (plan.outOfOrder) traffic.outOfOrder++
  for (const waves of plan.results)
    for (const wave of waves)
      for (const send of wave) {
        traffic.deliveries++
        traffic.byKind[send.kind]++
        if (send.duplicate !== 'no') traffic.duplicates[send.duplicate]++
      }
}

/** What the mid-run store restart did. */
interface Restart {
  atPayment: number
  inFlight: number
  crashedAt: number
  /** From the crash until the store answered again. */
  outageMs: number
}

const PERSISTENCE_NAMES = { none: 'no persistence (save \'\', appendonly no)', everysec: 'AOF, appendfsync everysec', always: 'AOF, appendfsync always' }

/** With --restart-store, the run gets a private server of its own (crashed and restarted mid-run), else the shared one. */
async function soak(store: StoreKind, config: SoakConfig): Promise<boolean> {
  if (!config.restartStore) return soakOn(store, config, undefined)
  const server = store === 'redis' ? await PrivateRedis.start(config.redisPersistence) : await PrivatePostgres.start()
  console.log(`\n== private ${store} on port ${server.port}${store === 'redis' ? `: ${PERSISTENCE_NAMES[config.redisPersistence]}` : ''}, crashed and restarted mid-run`)
  try {
    return await soakOn(store, store === 'redis' ? { ...config, redisUrl: server.url } : { ...config, databaseUrl: server.url }, server)
  } finally {
    await server.stop()
  }
}

async function soakOn(store: StoreKind, config: SoakConfig, server: PrivateRedis | PrivatePostgres | undefined): Promise<boolean> {
  const tag = randomBytes(5).toString('hex')
  console.log(`\n== soak on ${store}: ${config.workers} workers, ${n(config.payments)} payments, ${config.kills} kills, seed ${config.seed}, run ${tag}`)
  console.log(
    `settings    ${config.concurrency} payments at a time, ${Math.round(config.duplicateRate * 100)}% duplicated, handlers failing ${Math.round(config.failRate * 100)}%, ` +
      `lease ${config.leaseMs} ms${store === 'postgres' ? ', transactional' : ''}, ${config.poolSize} pg connections per worker` +
      (config.inbox ? `; INBOX mode, handler outage ${Math.round(config.outageMs / 1000)} s, backoff up to ${config.backoffMaxMs} ms` : ''),
  )
  const resources = await createResources(store, config, tag)
  const fleet = new Fleet({
    store,
    ledgerTable: resources.ledgerTable,
    storeTable: resources.storeTable,
    redisPrefix: resources.redisPrefix,
    failRate: config.failRate,
    leaseMs: config.leaseMs,
    effectDelayMs: config.effectDelayMs,
    poolSize: config.poolSize,
    redisUrl: config.redisUrl,
    databaseUrl: config.databaseUrl,
    // The outage starts now, before any traffic, and outlasts it.
    ...(config.inbox ? { inbox: { outageStartAt: Date.now(), outageEndAt: Number.MAX_SAFE_INTEGER, backoffMaxMs: config.backoffMaxMs } } : {}),
    storeRestarts: server !== undefined,
  })
  const outageStartAt = Date.now()
  current = { fleet, resources, keep: config.keep }
  const sender = new Sender(fleet, config.maxAttempts)
  try {
    await fleet.start(config.workers)
    const payments = new Map<string, PaymentPlan>()
    const traffic: Traffic = { b2b1: 0, outOfOrder: 0, deliveries: 0, byKind: { callback: 0, redirect: 0 }, duplicates: { concurrent: 0, later: 0 } }
    let nextDelivery = 1
    const planOptions = { seed: config.seed, runTag: tag, duplicateRate: config.duplicateRate, nextDelivery: () => nextDelivery++ }

    // Kills spread evenly over the run, each after the previous one's replacement is up.
    const killAt = Array.from({ length: config.kills }, (_, k) => Math.floor(((k + 1) * config.payments) / (config.kills + 1)))
    let killing: Promise<unknown> = Promise.resolve()
    let killFailed: unknown
    let restarting: Promise<Restart> | undefined
    // A worker's fair share of the requests in flight.
    const busy = Math.max(1, Math.ceil(config.concurrency / config.workers))
    let done = 0
    let next = 0
    const started = performance.now()
    const lane = async () => {
      while (next < config.payments) {
        const plan = planPayment(next++, planOptions)
        payments.set(plan.exchangeNumber, plan)
        tally(traffic, plan)
        for (const waves of plan.results)
          for (const wave of waves) {
            const first = Math.floor(Math.random() * fleet.size)
            await Promise.all(wave.map((send, i) => sender.deliver(send, first + i)))
          }
        done++
        if (server !== undefined && restarting === undefined && done >= config.payments / 2) {
          const atPayment = done
          const inFlight = fleet.inFlight
          const crashedAt = Date.now()
          restarting = server.crashAndRestart(config.downMs).then(() => ({ atPayment, inFlight, crashedAt, outageMs: Date.now() - crashedAt }))
        }
        while (killAt.length > 0 && done >= (killAt[0] as number)) {
          killAt.shift()
          killing = killing
            .then(() => fleet.killBusy(busy, 2000))
            .catch((error: unknown) => {
              killFailed ??= error
            })
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(config.concurrency, config.payments) }, lane))
    const seconds = (performance.now() - started) / 1000
    await killing
    if (killFailed !== undefined) throw killFailed
    const figures = config.inbox ? await drainInbox(store, config, resources, fleet, outageStartAt) : undefined
    const restart = await restarting
    await fleet.stop()

    const rows = await ledgerRows(resources)
    const state = await storeState(resources, [...payments.keys()])
    const findings = check({
      store,
      payments,
      rows,
      pids: fleet.pids,
      kills: fleet.kills,
      storeHandled: state.handled,
      leasesLeft: state.leasesLeft,
      restartForgets: server === undefined ? undefined : store === 'redis' && config.redisPersistence !== 'always',
      restartWindow: restart === undefined ? undefined : { from: restart.crashedAt, to: restart.crashedAt + restart.outageMs },
      restartInFlight: restart?.inFlight,
    })
    if (server !== undefined && restart === undefined) findings.violations.set('the store was never restarted', { count: 1, examples: [] })
    for (const send of sender.stats.lost) {
      const entry = findings.violations.get('lost: a delivery never got a 2xx') ?? { count: 0, examples: [] }
      entry.count++
      if (entry.examples.length < 5) entry.examples.push(`delivery ${send.delivery} (${send.kind}, ${send.state})`)
      findings.violations.set('lost: a delivery never got a 2xx', entry)
    }
    const drainKills = figures?.drainKill === undefined ? 0 : 1
    if (fleet.kills.length !== config.kills + drainKills) findings.violations.set('kills missing', { count: config.kills + drainKills - fleet.kills.length, examples: [] })
    if (figures !== undefined)
      for (const [kind, example] of inboxReport(figures, config).violations) findings.violations.set(kind, { count: 1, examples: [example] })
    report(store, config, traffic, sender, fleet.kills, findings, seconds, figures, restart)
    return findings.violations.size === 0
  } finally {
    sender.close()
    await fleet.stop()
    await dropResources(resources, config.keep)
    if (config.keep)
      console.log(`kept        ledger ${resources.ledgerTable}, ${store === 'postgres' ? `store table ${resources.storeTable}` : `Redis keys ${resources.redisPrefix}*`}`)
    current = undefined
  }
}

function report(
  store: StoreKind,
  config: SoakConfig,
  traffic: Traffic,
  sender: Sender,
  kills: readonly Kill[],
  findings: Findings,
  seconds: number,
  figures: InboxFigures | undefined,
  restart: Restart | undefined,
): void {
  const { stats } = sender
  const responses = [...stats.responses].sort((a, b) => b[1] - a[1]).map(([label, count]) => `${label} × ${n(count)}`)
  const lines = [
    ['payments', `${n(config.payments)} (B2C ${n(config.payments - traffic.b2b1)}, B2B1 99/final pairs ${n(traffic.b2b1)}, of them out of order ${n(traffic.outOfOrder)})`],
    [
      'deliveries',
      `${n(traffic.deliveries)} (callback ${n(traffic.byKind.callback)}, redirect ${n(traffic.byKind.redirect)}; ` +
        `duplicates ${n(traffic.duplicates.concurrent)} concurrent to another process + ${n(traffic.duplicates.later)} later)`,
    ],
    ['requests', `${n(stats.requests)}: ${responses.join(' | ')}`],
    ['retries', `${n(stats.retries)}; deliveries lost (no 2xx after ${config.maxAttempts} attempts) ${n(stats.lost.length)}`],
    [
      'kills',
      `${kills.length}${kills.length > 0 ? ': ' : ''}` +
        kills.map((kill) => `pid ${kill.pid} (slot ${kill.slot}, ${kill.inFlight} in flight, replaced in ${n(kill.restartMs)} ms)`).join('; '),
    ],
    [
      'ledger',
      `${n(findings.rows)} rows for ${n(findings.pairs)} (exchange_number, state) pairs; double runs ${n(findings.doubleRuns)} ` +
        `(allowed ≤ ${n(findings.doubleRunBound)}${store === 'postgres' ? ': transactional, none' : ': requests in flight on the killed workers'}` +
        `${[...findings.doubleRunsByPid].map(([pid, count]) => `; pid ${pid} × ${count}`).join('')})`,
    ],
    ...(restart === undefined
      ? []
      : [
          [
            'restart',
            `${store}${store === 'redis' ? ` (${PERSISTENCE_NAMES[config.redisPersistence]})` : ', transactional'} crashed after payment ${n(restart.atPayment)} ` +
              `with ${restart.inFlight} requests in flight, answering again after ${n(restart.outageMs)} ms`,
          ],
          [
            'restart ∑',
            `second runs across the restart ${n(findings.restartDoubleRuns)}, regressions ${n(findings.regressions)}, ` +
              `payments the store forgot ${n(findings.forgotten)}, lost ${n(sender.stats.lost.length)}`,
          ],
        ]),
    ['throughput', `${n(Math.round(traffic.deliveries / seconds))} deliveries/s, ${n(Math.round(stats.requests / seconds))} requests/s, ${n(Math.round(config.payments / seconds))} payments/s (${seconds.toFixed(1)} s)`],
  ]
  if (figures !== undefined) lines.push(...inboxReport(figures, config).lines)
  for (const [label, text] of lines) console.log(`${(label as string).padEnd(11)} ${text}`)
  if (findings.violations.size === 0) {
    console.log(`result      OK: every payment at its final state, nothing lost, no second run beyond what the ${store} store promises`)
    return
  }
  console.log('result      FAILED')
  for (const [kind, { count, examples }] of findings.violations) {
    console.log(`  ✗ ${kind}: ${n(count)}`)
    for (const example of examples) console.log(`      ${example}`)
  }
}

async function main(): Promise<void> {
  let config: SoakConfig
  try {
    config = loadConfig()
  } catch (error) {
    console.error((error as Error).message)
    process.exitCode = 2
    return
  }
  process.exitCode = (await onEachStore(config, 'soak', soak)) ? 0 : 1
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    const run = current
    console.error(`\n${signal}: stopping the workers and removing the run's tables and keys`)
    void (async () => {
      if (run !== undefined) {
        await run.fleet.stop()
        await dropResources(run.resources, run.keep)
      }
      process.exit(130)
    })()
  })

await main()
