/**
 * npm run bench:http — req/s and p99 latency of a payment callback route over real HTTP, in one run:
 *   (a) the framework's own form parser plus the verification merchants write by hand today,
 *   (b) fpx-collect's adapter with the memory store and a no-op handler,
 *   (c) @octokit/webhooks' createNodeMiddleware verifying a same-size signed JSON payload, the best-known peer,
 *       and, to compare with it like for like, (b) on bare node:http as well.
 * Every request carries a body never sent to that server before, validly signed, so (b) never takes its
 * duplicate path. Each server runs in a child process: with two cores and autocannon in this process, a server
 * sharing the event loop with its own load generator measures the generator as much as the server.
 *
 * Environment: BENCH_DURATION (s, default 3), BENCH_CONNECTIONS (10), BENCH_WARMUP (s, 1), BENCH_BODIES (how many
 * signed bodies to sign before the first scenario; default from the duration; the pool then grows to each run: after
 * a scenario's warm-up, it holds three times what the warm-up's rate takes in BENCH_DURATION), BENCH_ROUNDS (1; the best round of each scenario is
 * reported), BENCH_ONLY (comma-separated scenario names), BENCH_IN_PROCESS=1 (servers in this process, for
 * comparison), BENCH_CPU_PROF=<dir> (a .cpuprofile per server child), BENCH_OBSERVE=0 (receivers without the timeline
 * and OpenTelemetry), BENCH_TURNS, BENCH_TURN_REQUESTS and BENCH_TURN_LAUNCHES (http-turns.ts), BENCH_PIN=1 (Linux: the servers on one CPU,
 * this process on the others; http-launch.ts).
 *
 * A goal by server CPU per request (Fastify b/a, b/c) is judged on its two servers measured in turns afterwards
 * (http-turns.ts): runs seconds apart on a shared machine read the same ratio 0.79-1.05.
 */
import { availableParallelism } from 'node:os'
import type autocannon from 'autocannon'
import { CallbackPool, Feed } from './http-bodies.js'
import { CHECKSUM_TOKEN, SCENARIOS, type Scenario } from './http-servers.js'
import { CONNECTIONS, IN_PROCESS, feedFor, launch, load, pathFor, runProblems } from './http-launch.js'
import { inTurns, type Turns } from './http-turns.js'
import { envNumber } from './env.js'

const DURATION = envNumber('BENCH_DURATION', 3, 1)
const WARMUP = envNumber('BENCH_WARMUP', 1, 0)
// Enough for the warm-up of the fastest callback server; each measured run then gets what its warm-up's rate asks
// (CallbackPool.ensure). Webhooks for octokit are signed as they are sent, so they never run out.
const BODIES = Math.floor(envNumber('BENCH_BODIES', Math.ceil((DURATION + WARMUP) * 15_000), 1))
/** The rate a run is sized for when there is no warm-up to measure: above any callback server seen on 2 cores. */
const UNMEASURED_RATE = 40_000
const ROUNDS = Math.floor(envNumber('BENCH_ROUNDS', 1, 1))
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim())

interface Measured {
  scenario: Scenario
  result: autocannon.Result
  /** Server CPU time per handled request, in µs; in-process it includes the load generator's. */
  serverMicros: number
  /** Share of one core the load generator used; near 100 % it, not the server, sets the pace. */
  clientPercent: number
  problems: string[]
}

async function measure(scenario: Scenario, pool: CallbackPool): Promise<Measured> {
  const feed = feedFor(scenario, pool, WEBHOOK_BYTES)
  const path = pathFor(scenario)
  const server = await launch(scenario)
  const problems: string[] = []
  try {
    const warm = WARMUP > 0 ? await load(server.port, path, feed, WARMUP) : undefined
    // Sized to this run, while the server idles: three times what the warm-up's rate takes in DURATION (a server
    // still compiling its code during a one-second warm-up later ran twice as fast).
    if (feed instanceof Feed && scenario !== 'fastify-ceiling') feed.ensure(Math.ceil((warm?.requests.average ?? UNMEASURED_RATE) * DURATION * 3) + 1000)
    const before = await server.stats()
    const clientBefore = process.cpuUsage()
    const result = await load(server.port, path, feed, DURATION)
    const client = process.cpuUsage(clientBefore)
    const after = await server.stats()
    for (const [label, run] of [['warm-up', warm], ['run', result]] as const) if (run !== undefined) problems.push(...runProblems(label, run))
    if (result['2xx'] === 0) problems.push('no successful response at all')
    // Each 200 follows a handler run, unless it was answered as a duplicate without one.
    const ok = result['2xx'] + (warm?.['2xx'] ?? 0)
    if (after.handled < ok) problems.push(`${ok} responses 200 but only ${after.handled} handler runs: not every delivery was fresh`)
    // The ceiling neither verifies nor deduplicates: a resent body costs it the same, and at ~30k req/s it would
    // need twice the bodies the verifying servers do.
    if (feed.wrapped && scenario !== 'fastify-ceiling')
      problems.push(`ran out of the ${pool.items.length} pre-signed bodies and resent some: the run went 3 times faster than its warm-up`)
    return {
      scenario,
      result,
      serverMicros: (after.cpuMicros - before.cpuMicros) / Math.max(1, after.handled - before.handled),
      clientPercent: ((client.user + client.system) / (result.duration * 1e6)) * 100,
      problems,
    }
  } finally {
    await server.close()
  }
}

const LABELS: Record<Scenario, string> = {
  'express-parser': 'Express 5 (a) express.urlencoded + naive',
  'express-fpx': 'Express 5 (b) fpx-collect fpxCallback',
  'koa-parser': 'Koa 3     (a) @koa/bodyparser + naive',
  'koa-fpx': 'Koa 3     (b) fpx-collect fpxCallback',
  'fastify-ceiling': 'Fastify 5 ceiling: buffer parser, answers OK',
  'fastify-handle': 'Fastify 5 route calling receiver.handle()',
  'fastify-parser': 'Fastify 5 (a) @fastify/formbody + naive',
  'fastify-fpx': 'Fastify 5 (b) fpx-collect plugin',
  octokit: 'node:http (c) @octokit/webhooks middleware',
  'node-fpx': 'node:http (b) fpx-collect, no framework',
}

const selected = SCENARIOS.filter((scenario) => ONLY === undefined || ONLY.includes(scenario))
if (selected.length === 0) throw new Error(`BENCH_ONLY matches no scenario; use ${SCENARIOS.join(', ')}`)

const started = performance.now()
const forms = new CallbackPool(BODIES, CHECKSUM_TOKEN)
const formBytes = forms.items.reduce((sum, signed) => sum + signed.body.length, 0) / forms.items.length
const WEBHOOK_BYTES = Math.round(formBytes)
console.log(
  `Node ${process.version}, ${availableParallelism()} CPUs; ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s ` +
    `per scenario, best of ${ROUNDS} round(s); servers ${IN_PROCESS ? 'in this process' : 'in child processes'}`,
)
console.log(
  `${BODIES} signed callbacks (mean ${formBytes.toFixed(0)} bytes) generated in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
    `webhook deliveries of ${WEBHOOK_BYTES} bytes signed as they are sent\n`,
)

// Rounds go through every scenario in turn, so a burst of load from elsewhere on the machine hits one round of
// each rather than every round of one; the best round of each is kept.
const best = new Map<Scenario, Measured>()
const failed: Pick<Measured, 'scenario' | 'problems'>[] = []
for (let round = 1; round <= ROUNDS; round++) {
  for (const scenario of selected) {
    const run = await measure(scenario, forms)
    const { result } = run
    console.log(
      `${ROUNDS > 1 ? `#${round} ` : ''}${LABELS[scenario].padEnd(43)} ${result.requests.average.toFixed(0).padStart(6)} req/s  ` +
        `p99 ${String(result.latency.p99).padStart(3)} ms` +
        `${IN_PROCESS ? '' : `  ${run.serverMicros.toFixed(0).padStart(4)} µs server CPU/req`}` +
        `${run.problems.length > 0 ? '  FAILED' : ''}`,
    )
    if (run.problems.length > 0) failed.push(run)
    const kept = best.get(scenario)
    if (kept === undefined || result.requests.average > kept.result.requests.average) best.set(scenario, run)
  }
}

const measured = selected.map((scenario) => best.get(scenario)!)
console.log()
console.table(
  measured.map(({ scenario, result, serverMicros, clientPercent }) => ({
    scenario: LABELS[scenario],
    'req/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    // In one process the two CPU figures cannot be told apart.
    ...(IN_PROCESS ? {} : { 'server µs CPU/req': Math.round(serverMicros), 'client CPU %': Math.round(clientPercent) }),
    '200s': result['2xx'],
  })),
)

// Where the Fastify adapter's server CPU per request goes: Fastify itself (the ceiling), the receiver's handle()
// called straight from a route, and what the plugin adds (encapsulation, error handler, answerDelivery, headers).
const [ceiling, direct, plugin] = (['fastify-ceiling', 'fastify-handle', 'fastify-fpx'] as const).map((name) => best.get(name))
if (!IN_PROCESS && ceiling && direct && plugin) {
  console.log(
    `Fastify adapter, server CPU µs per request: ${plugin.serverMicros.toFixed(0)} = Fastify ${ceiling.serverMicros.toFixed(0)}` +
      ` + receiver.handle() ${(direct.serverMicros - ceiling.serverMicros).toFixed(0)}` +
      ` + plugin ${(plugin.serverMicros - direct.serverMicros).toFixed(0)}\n`,
  )
}

// [name, ours, theirs, goal by req/s (NaN: none), goal by server CPU per request (NaN: none)]
const ratios: [string, Scenario, Scenario, number, number][] = [
  ['Express b/a', 'express-fpx', 'express-parser', 0.95, Number.NaN],
  ['Koa b/a', 'koa-fpx', 'koa-parser', 0.95, Number.NaN],
  ['Fastify b/a', 'fastify-fpx', 'fastify-parser', 0.95, 0.95],
  ['Fastify b/c', 'fastify-fpx', 'octokit', Number.NaN, 0.8], // issue 35
  // Not goals: how close the adapter comes to Fastify doing nothing, and both on bare node:http.
  ['Fastify b/ceiling', 'fastify-fpx', 'fastify-ceiling', Number.NaN, Number.NaN],
  ['node:http b/c', 'node-fpx', 'octokit', Number.NaN, Number.NaN],
]
const verdict = (value: number, goal: number) => (Number.isNaN(goal) ? '' : ` (goal >= ${goal.toFixed(2)}: ${value >= goal ? 'met' : 'NOT met'})`)
const byTurns: [string, Scenario, Scenario, number][] = []
for (const [name, ours, theirs, rateGoal, cpuGoal] of ratios) {
  const [b, other] = [best.get(ours), best.get(theirs)]
  if (b === undefined || other === undefined) continue
  const ratio = b.result.requests.average / other.result.requests.average
  // Less sensitive to other load on the machine than req/s: what each request cost the server's core. A CPU goal is
  // judged on the two servers measured in turns (http-turns.ts), not on runs seconds apart.
  const cpu = other.serverMicros / b.serverMicros
  const byCpu = IN_PROCESS ? '' : `, ${cpu.toFixed(2)} by server CPU per request${Number.isNaN(cpuGoal) ? '' : ' (best rounds; the goal is judged in turns, below)'}`
  console.log(`${name.padEnd(17)} = ${ratio.toFixed(2)} by req/s${verdict(ratio, rateGoal)}${byCpu}`)
  if (!IN_PROCESS && !Number.isNaN(cpuGoal)) byTurns.push([name, ours, theirs, cpuGoal])
}

for (const [name, ours, theirs, goal] of byTurns) {
  const turns: Turns = await inTurns(ours, theirs, forms, WEBHOOK_BYTES, WARMUP)
  const list = (micros: number[]) => micros.map((value) => value.toFixed(0)).join(' ')
  console.log(
    `\n${name} in turns: ${LABELS[ours].trim()} ${list(turns.ours)} µs server CPU/req; ${LABELS[theirs].trim()} ${list(turns.theirs)}\n` +
      `${name.padEnd(17)} = ${turns.ratio.toFixed(2)} by server CPU per request, median of ${turns.ours.length} pairs of turns${verdict(turns.ratio, goal)}\n` +
      `${' '.repeat(17)}   each launch of the two servers alone: ${turns.launches.map((ratio) => ratio.toFixed(2)).join(', ')}`,
  )
  if (turns.problems.length > 0) failed.push({ scenario: ours, problems: turns.problems })
}

for (const run of failed) console.error(`\n${run.scenario} FAILED:\n  ${run.problems.join('\n  ')}`)
if (failed.length > 0) {
  console.error('\nThe figures above are not valid: some requests were not answered 200 by a fresh delivery.')
  process.exitCode = 1
}
