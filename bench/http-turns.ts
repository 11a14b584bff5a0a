/**
 * Two scenarios' servers compared in turns: both started and warmed up, then loaded one at a time for a short turn
 * each (A B, B A, A B, ...), each turn's server CPU per request read from that server's process alone. On a shared
 * 2-CPU machine whose speed drifts by up to 2x over seconds, runs of a few seconds one after the other read the
 * same servers' ratio 0.79-1.05 (bench/http.ts, best round of three); a pair of turns a second apart sees the same
 * machine, and the median of the pairs' ratios is what bench/http.ts gives for its CPU goals.
 *
 * A server process also carries luck of its own for its whole life: two copies of the same server, measured in turns
 * in one run, read up to 11 % apart (3-5 % pinned with BENCH_PIN=1). So the pairs are spread over several launches of
 * both servers, and each launch's median is reported beside the median of all pairs.
 *
 * Environment: BENCH_TURNS (pairs of turns, default 40), BENCH_TURN_REQUESTS (requests a turn, default 3000),
 * BENCH_TURN_LAUNCHES (launches of both servers the pairs are spread over, default 4).
 */
import { type CallbackPool, Feed, type RequestFeed } from './http-bodies.js'
import type { Scenario } from './http-servers.js'
import { CONNECTIONS, feedFor, launch, load, pathFor, runProblems } from './http-launch.js'
import { envNumber } from './env.js'
import { median } from './stats.js'

const PAIRS = Math.floor(envNumber('BENCH_TURNS', 40, 1))
const TURN_REQUESTS = Math.floor(envNumber('BENCH_TURN_REQUESTS', 3000, 100))
const LAUNCHES = Math.min(PAIRS, Math.floor(envNumber('BENCH_TURN_LAUNCHES', 4, 1)))

export interface Turns {
  /** Server CPU µs per request in each of `ours`' turns and `theirs`', in the order they ran. */
  ours: number[]
  theirs: number[]
  /** The median over the pairs of theirs / ours (above 1: ours costs its server less per request). */
  ratio: number
  /** The same median over each launch's pairs alone, in launch order. */
  launches: number[]
  problems: string[]
}

interface Side {
  scenario: Scenario
  feed: RequestFeed
  path: string
  micros: number[]
}

const pairRatios = (mine: readonly number[], others: readonly number[]) => mine.map((micros, pair) => (others[pair] as number) / micros)

export async function inTurns(ours: Scenario, theirs: Scenario, pool: CallbackPool, webhookBytes: number, warmupSeconds: number): Promise<Turns> {
  const sides: Side[] = [ours, theirs].map((scenario) => ({ scenario, feed: feedFor(scenario, pool, webhookBytes), path: pathFor(scenario), micros: [] }))
  const problems: string[] = []
  const launches: number[] = []
  for (let round = 0; round < LAUNCHES; round++) {
    const from = sides[0]!.micros.length
    // The pairs split as evenly as they go: 40 over 4 launches is 10 each, 10 over 4 is 2, 3, 2, 3.
    const pairs = Math.floor(((round + 1) * PAIRS) / LAUNCHES) - Math.floor((round * PAIRS) / LAUNCHES)
    // Which server is started and warmed up first alternates by launch, as the order of turns does within one.
    await launchAndTurn(round % 2 === 0 ? sides : [...sides].reverse(), pairs, warmupSeconds, problems)
    const [mine, others] = sides.map((side) => side.micros.slice(from)) as [number[], number[]]
    launches.push(median(pairRatios(mine, others)))
  }
  for (const side of sides) if (side.feed.wrapped) problems.push(`${side.scenario}: ran out of pre-signed bodies and resent some`)
  const [mine, others] = sides.map((side) => side.micros) as [number[], number[]]
  return { ours: mine, theirs: others, ratio: median(pairRatios(mine, others)), launches, problems }
}

/**
 * Starts both sides' servers, warms them up in the order given, runs `pairs` pairs of turns (appending to each side's
 * micros), stops them.
 */
async function launchAndTurn(sides: Side[], pairs: number, warmupSeconds: number, problems: string[]): Promise<void> {
  const servers = await Promise.all(sides.map((side) => launch(side.scenario)))
  try {
    for (const [i, side] of sides.entries()) {
      const server = servers[i] as (typeof servers)[number]
      const warmSeconds = Math.max(2, warmupSeconds)
      // Enough for the warm-up of a server faster than any seen on 2 cores, so that it never resends a body.
      if (side.feed instanceof Feed) side.feed.ensure(40_000 * warmSeconds)
      const warm = await load(server.port, side.path, side.feed, warmSeconds)
      problems.push(...runProblems(`${side.scenario} warm-up`, warm))
    }
    for (let pair = 0; pair < pairs; pair++) {
      for (const i of pair % 2 === 0 ? [0, 1] : [1, 0]) {
        const [side, server] = [sides[i] as Side, servers[i] as (typeof servers)[number]]
        // Signed between turns, while both servers idle (autocannon may send a few more than asked).
        if (side.feed instanceof Feed) side.feed.ensure(TURN_REQUESTS + 10 * CONNECTIONS)
        const before = await server.stats()
        const run = await load(server.port, side.path, side.feed, { requests: TURN_REQUESTS })
        const after = await server.stats()
        const turn = side.micros.length + 1
        problems.push(...runProblems(`${side.scenario} turn ${turn}`, run))
        if (run['2xx'] === 0) problems.push(`${side.scenario} turn ${turn}: no successful response`)
        if (after.handled - before.handled < run['2xx']) problems.push(`${side.scenario}: ${run['2xx']} responses 200 but ${after.handled - before.handled} handler runs`)
        side.micros.push((after.cpuMicros - before.cpuMicros) / Math.max(1, after.handled - before.handled))
      }
    }
  } finally {
    await Promise.all(servers.map((server) => server.close()))
  }
}
