import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createClient } from 'redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../emulator/harness.js'
import { type Command, freePort, quoted, run, sleep, start, type Started, tail } from './processes.js'
import { BUN, DENO, environment, NEXT, nextBuild, nextStart, NODE22, WRANGLER, WRANGLER_FATAL, wranglerDev } from './runtimes.js'
import { startUpstashStandIn, type UpstashStandIn } from './stores/upstash-rest.js'
import { APPS } from './work.js'

/**
 * docs/runtimes.md's store table, run: on Node, Bun, Deno and workerd (nodejs_compat), a receiver on the Redis or
 * PostgreSQL store takes a signed callback twice through each client (test/runtimes/apps/stores/probe.js):
 * ioredis, node-redis and pg over TCP to the local Redis and PostgreSQL, and @upstash/redis over HTTP to a
 * stand-in for Upstash's REST API in front of the same Redis (stores/upstash-rest.ts). In the Worker, each client
 * is opened in the request; one kept across requests (as a receiver created at module scope would keep it) is
 * tried too: Workers refuse I/O on a socket opened by another request. On workerd without nodejs_compat and on
 * Vercel's edge, the durable store over HTTP (at the end of this file).
 */

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const CLIENTS = ['ioredis', 'node-redis', 'pg', 'upstash'] as const
const STORES = join(APPS, 'stores')
const PASSED = { first: '200', second: '200', runs: 1 }
const FORM = 'application/x-www-form-urlencoded'

interface Round {
  first?: string
  second?: string
  runs?: number
  error?: string
}

let upstash: UpstashStandIn

function variables(): Record<string, string> {
  return { REDIS_URL, DATABASE_URL, UPSTASH_URL: upstash.url, UPSTASH_TOKEN: upstash.token, FPX_CHECKSUM_TOKEN: DEMO.checksumToken }
}

/** The probe's JSON line, or what went wrong. */
async function probe(command: Command): Promise<Round> {
  try {
    const output = await run(command, 60_000)
    const line = output.split('\n').find((text) => text.startsWith('{'))
    return line === undefined ? { error: `no result line:\n${quoted(tail(output))}` } : (JSON.parse(line) as Round)
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

beforeAll(async () => {
  upstash = await startUpstashStandIn(REDIS_URL)
})

afterAll(async () => {
  await upstash?.stop()
})

const runtimes: { id: string; file: string; args: (client: string) => string[] }[] = [
  { id: 'node20', file: process.execPath, args: (client) => ['cli.js', client] },
  { id: 'bun', file: BUN, args: (client) => ['--no-install', 'cli.js', client] },
  { id: 'deno', file: DENO, args: (client) => ['run', '--node-modules-dir=manual', '--allow-net=127.0.0.1', '--allow-env', '--allow-read', 'cli.js', client] },
]

for (const runtime of runtimes) {
  describe(`the stores on ${runtime.id}`, () => {
    it.each(CLIENTS)('%s: a callback twice, handled once', async (client) => {
      expect(existsSync(runtime.file), `${runtime.file} is missing: run npm ci --prefix test/runtimes`).toBe(true)
      const round = await probe({ file: runtime.file, args: runtime.args(client), cwd: STORES, env: environment({ ...variables(), DENO_DIR: join(STORES, '..', '..', 'deno-dir'), DENO_NO_UPDATE_CHECK: '1' }) })
      expect(round, `${runtime.id} with ${client}`).toEqual(PASSED)
    })
  })
}

describe('the stores on workerd (wrangler dev --local, nodejs_compat)', () => {
  let worker: Started | undefined
  let url = ''

  beforeAll(async () => {
    expect(existsSync(NODE22) && existsSync(WRANGLER), 'wrangler or the Node 22 it runs on is missing: run npm ci --prefix test/runtimes').toBe(true)
    const port = await freePort()
    url = `http://127.0.0.1:${port}`
    worker = start(wranglerDev(STORES, 'wrangler.jsonc', port, await freePort(), variables()))
    const deadline = Date.now() + 60_000
    for (;;) {
      if (worker.exited() !== undefined || WRANGLER_FATAL.test(worker.output())) throw new Error(`the store probe's Worker did not start:\n${quoted(tail(worker.output()))}`)
      const answer = await fetch(`${url}/?client=none`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined)
      if (answer?.status === 200) break
      if (Date.now() > deadline) throw new Error(`the store probe's Worker did not answer within 60 s:\n${quoted(tail(worker.output()))}`)
      await sleep(250)
    }
  }, 120_000)

  afterAll(async () => {
    await worker?.stop()
  })

  const round = async (query: string): Promise<Round> => {
    const answer = await fetch(`${url}/?${query}`, { signal: AbortSignal.timeout(30_000) }).catch((error: unknown) => ({ error }))
    if ('error' in answer) return { error: String(answer.error) }
    const text = await answer.text()
    return answer.status === 200 ? (JSON.parse(text) as Round) : { error: `${answer.status} ${text.slice(0, 300)}` }
  }

  it.each(CLIENTS)('%s opened in the request: a callback twice, handled once', async (client) => {
    expect(await round(`client=${client}`), `workerd with ${client}\n${quoted(tail(worker?.output() ?? '', 20))}`).toEqual(PASSED)
  })

  it('@upstash/redis kept across requests (HTTP, no socket): still handled once per payment', async () => {
    const before = upstash.commands
    expect(await round('client=upstash&keep')).toEqual(PASSED)
    expect(await round('client=upstash&keep')).toEqual(PASSED)
    // The store's commands went over HTTP, through the stand-in.
    expect(upstash.commands).toBeGreaterThan(before)
  })

  it('a pg Pool kept across requests: the second request cannot use the first one\'s connection', async () => {
    expect(await round('client=pg&keep')).toEqual(PASSED)
    const second = await round('client=pg&keep')
    expect(second).not.toEqual(PASSED)
    // The claim waits on another request's socket, which never answers there: the receiver answers 503
    // store_unavailable once the store's time is up (half the lease, at most 10 s); without that deadline workerd
    // cancels the request as hung, or refuses the I/O.
    expect(`${JSON.stringify(second)}\n${worker?.output()}`).toMatch(/store_unavailable|hung|Cannot perform I\/O on behalf of a different request/)
  }, 60_000)
})

/**
 * The durable store for Workers and Vercel's edge (docs/runtimes.md): the Redis store over HTTP with
 * @upstash/redis, on runtimes that have only the web platform (test/runtimes/apps/stores-http/). The client, store
 * and receiver are created at module scope and kept across requests; each answer hands the receiver's background
 * work to the runtime (`ctx.waitUntil(receiver.flush())` in the Worker, Next's `after()` on the edge). The
 * timeline is then read back from Redis here, on Node, through another client: it reached the durable store from
 * inside the runtime, after the answer.
 */
const HTTP_APP = join(APPS, 'stores-http')
const httpApps: { id: string; title: string; needs: string[]; build?: () => Command; start: (port: number, spare: number, vars: Record<string, string>) => Command; base: string; fatal?: RegExp }[] = [
  {
    id: 'workerd',
    title: 'workerd without nodejs_compat (wrangler dev --local)',
    needs: [NODE22, WRANGLER],
    start: (port, spare, vars) => wranglerDev(HTTP_APP, 'wrangler.jsonc', port, spare, vars),
    base: '',
    fatal: WRANGLER_FATAL,
  },
  {
    id: 'next-edge',
    title: "Vercel's edge runtime (a Next.js route with runtime = 'edge', next build, next start)",
    needs: [NEXT],
    build: () => nextBuild(join(HTTP_APP, 'next-edge')),
    start: (port, _spare, vars) => nextStart(join(HTTP_APP, 'next-edge'), port, vars),
    base: '/fpx',
  },
]

for (const app of httpApps) {
  describe(`the Redis store over HTTP (@upstash/redis) on ${app.title}`, () => {
    const prefix = `fpx_http_${app.id.replace('-', '_')}_${Date.now().toString(36)}:`
    let server: Started | undefined
    let url = ''
    let reader: ReturnType<typeof createClient> | undefined

    beforeAll(async () => {
      expect(app.needs.every((path) => existsSync(path)), `${app.needs.join(', ')}: run npm ci --prefix test/runtimes`).toBe(true)
      if (app.build !== undefined) await run(app.build(), 300_000)
      const port = await freePort()
      url = `http://127.0.0.1:${port}${app.base}`
      server = start(app.start(port, await freePort(), { UPSTASH_URL: upstash.url, UPSTASH_TOKEN: upstash.token, FPX_CHECKSUM_TOKEN: DEMO.checksumToken, STORE_PREFIX: prefix }))
      const deadline = Date.now() + 60_000
      for (;;) {
        if (server.exited() !== undefined || app.fatal?.test(server.output()) === true) throw new Error(`the app did not start:\n${quoted(tail(server.output()))}`)
        if ((await fetch(`${url}/runs`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined))?.status === 200) break
        if (Date.now() > deadline) throw new Error(`the app did not answer within 60 s:\n${quoted(tail(server.output()))}`)
        await sleep(250)
      }
      reader = createClient({ url: REDIS_URL })
      await reader.connect()
    }, 420_000)

    afterAll(async () => {
      await server?.stop()
      await reader?.quit()
    })

    /** The timeline's events for one payment, as a receiver on Node reads them from the same Redis. */
    const timeline = async (exchangeNumber: string): Promise<string[]> => {
      const receiver = createReceiver({ checksumToken: DEMO.checksumToken, signatureOnly: true, logger: false, store: redisStore({ client: reader!, prefix, inspect: false }) })
      try {
        return (await receiver.timeline({ exchangeNumber })).map((entry) => entry.event)
      } finally {
        await receiver.close()
      }
    }

    const deliver = async (body: string, query = ''): Promise<number> => {
      const answer = await fetch(`${url}/fpx/callback${query}`, { method: 'POST', headers: { 'content-type': FORM }, body, signal: AbortSignal.timeout(30_000) })
      await answer.text()
      return answer.status
    }

    it('a callback twice: 200, 200, the handler once, with a receiver kept across requests', async () => {
      const before = upstash.commands
      const fields = samplePaymentFields()
      const { body } = signCallback(fields, DEMO.checksumToken)
      expect([await deliver(body), await deliver(body)]).toEqual([200, 200])
      const runs = (await (await fetch(`${url}/runs`)).json()) as Record<string, number>
      expect(runs[String(fields.exchange_number)], tail(server?.output() ?? '', 20)).toBe(1)
      // The store's commands went over HTTP, through the stand-in.
      expect(upstash.commands).toBeGreaterThan(before)
    })

    it("hands the timeline's write to the runtime after the answer: the entries reach Redis", async () => {
      const fields = samplePaymentFields()
      const { body } = signCallback(fields, DEMO.checksumToken)
      expect([await deliver(body), await deliver(body)]).toEqual([200, 200])
      await expect.poll(() => timeline(String(fields.exchange_number)), { timeout: 10_000 }).toEqual(['received', 'verified', 'processed', 'received', 'verified', 'duplicate'])
    })

    // workerd ends a request's work with its response: a timer still pending then (the timeline's batch) never runs.
    // `next start` is a long-lived Node server that runs it anyway, so there the hand-over shows nothing.
    if (app.id === 'workerd')
      it('without the hand-over, the entries never reach Redis: the runtime dropped the write', async () => {
        const fields = samplePaymentFields()
        expect(await deliver(signCallback(fields, DEMO.checksumToken).body, '?after=none')).toBe(200)
        expect((await (await fetch(`${url}/runs`)).json()) as Record<string, number>).toHaveProperty(String(fields.exchange_number), 1)
        await sleep(2000)
        expect(await timeline(String(fields.exchange_number))).toEqual([])
      })
  })
}
