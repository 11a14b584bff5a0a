/**
 * npm run bench:web-crypto — `receiver.verify()` of one realistic callback on Node with the two crypto paths the
 * package chooses between (issue 35: the Web Crypto path within 2× of node:crypto). Two child processes on the
 * built dist/: one as Node runs it (node:crypto), one where `process.getBuiltinModule` is deleted before the package
 * loads, as on a Worker without nodejs_compat or an edge runtime (Web Crypto's HMAC verify). They take turns, round
 * after round, and the ratio is the median of the rounds' own ratios. Each child also times its platform's bare
 * check of the same bytes (createHmac + timingSafeEqual; crypto.subtle.verify), the floor under each path: Web
 * Crypto hands each call to a worker thread and back, whose cost depends on the machine.
 * Environment: BENCH_ROUNDS (default 9), BENCH_TIME_MS (per child and round, default 300).
 */
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { fromDist, type Core, type Testing } from './dist.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const ROUNDS = envInteger('BENCH_ROUNDS', 9, 1)
const TIME_MS = envInteger('BENCH_TIME_MS', 300, 10)

const checksumToken = '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f'

if (process.argv[2] === 'child') {
  const { createReceiver } = await fromDist<Core>('index')
  // Signed by the parent: signing at once (signCallback) needs node:crypto, which the web child has not.
  const { body, contentType } = JSON.parse(process.env.BENCH_SIGNED as string) as { body: string; contentType: string }
  const bytes = new TextEncoder().encode(body)
  const receiver = createReceiver({ checksumToken, signatureOnly: true, logger: false })
  if ((await receiver.verify({ body: bytes, contentType })).state !== 'succeeded') throw new Error('the receiver refused the input')
  const web = typeof process.getBuiltinModule !== 'function'
  const bare = await bareCheck(web, bytes)
  const opsPerSecond = async (step: () => Promise<unknown>) => {
    let ops = 0
    const start = performance.now()
    while (performance.now() - start < TIME_MS) {
      for (let i = 0; i < 50; i++) await step()
      ops += 50
    }
    return (ops * 1000) / (performance.now() - start)
  }
  process.on('message', async () => {
    const verify = await opsPerSecond(() => receiver.verify({ body: bytes, contentType }))
    process.send?.({ opsPerSecond: verify, bareOpsPerSecond: await opsPerSecond(bare), web })
  })
  process.send?.({ ready: true })
} else {
  const self = new URL(import.meta.url).pathname
  const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')
  const env = { ...process.env, BENCH_SIGNED: JSON.stringify(signCallback(samplePaymentFields(), checksumToken)) }
  const start = (web: boolean) => {
    const execArgv = ['--import', 'tsx', ...(web ? ['--import', 'data:text/javascript,delete process.getBuiltinModule'] : [])]
    return fork(self, ['child'], { execArgv, env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  }
  const children = { node: start(false), web: start(true) }
  await Promise.all(Object.values(children).map((child) => once(child, 'message')))
  const round = async (child: ReturnType<typeof start>) => {
    child.send('go')
    const [reply] = (await once(child, 'message')) as [{ opsPerSecond: number; bareOpsPerSecond: number; web: boolean }]
    return reply
  }
  const node: number[] = []
  const web: number[] = []
  const bare = { node: [] as number[], web: [] as number[] }
  for (let i = 0; i < ROUNDS; i++) {
    // Forwards then backwards, so that neither always runs first.
    const order = i % 2 === 0 ? (['node', 'web'] as const) : (['web', 'node'] as const)
    for (const name of order) {
      const reply = await round(children[name])
      if (reply.web !== (name === 'web')) throw new Error(`the ${name} child did not run the path it was meant to`)
      ;(name === 'node' ? node : web).push(reply.opsPerSecond)
      bare[name].push(reply.bareOpsPerSecond)
    }
  }
  for (const child of Object.values(children)) child.kill()
  const ratio = median(node.map((value, i) => value / (web[i] as number)))
  console.log(`verify(), ${ROUNDS} rounds of ${TIME_MS} ms each, medians:`)
  console.table([
    { path: 'node:crypto (createHmac, timingSafeEqual)', 'ops/s': Math.round(median(node)), 'µs/op': Number((1e6 / median(node)).toFixed(2)) },
    { path: 'Web Crypto (crypto.subtle.verify)', 'ops/s': Math.round(median(web)), 'µs/op': Number((1e6 / median(web)).toFixed(2)) },
    { path: 'bare createHmac + timingSafeEqual', 'ops/s': Math.round(median(bare.node)), 'µs/op': Number((1e6 / median(bare.node)).toFixed(2)) },
    { path: 'bare crypto.subtle.verify', 'ops/s': Math.round(median(bare.web)), 'µs/op': Number((1e6 / median(bare.web)).toFixed(2)) },
  ])
  // The least the Web Crypto path can read on this machine: verify() with the rest of its work free.
  const floor = median(node.map((value, i) => value / (bare.web[i] as number)))
  console.log(`bare crypto.subtle.verify time / verify() on node:crypto = ${floor.toFixed(2)}  (the floor of the ratio below on this machine)`)
  console.log(`Web Crypto time / node:crypto time = ${ratio.toFixed(2)}  (goal <= 2: ${ratio <= 2 ? 'met' : 'NOT met'})`)
}

/** The platform's own check of `bytes` against their HMAC, as each path calls it, with nothing of the package. */
async function bareCheck(web: boolean, bytes: Uint8Array): Promise<() => Promise<unknown>> {
  const token = new TextEncoder().encode(checksumToken)
  const key = await crypto.subtle.importKey('raw', token, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, bytes))
  if (web) return () => crypto.subtle.verify('HMAC', key, mac, bytes)
  const { createHmac, timingSafeEqual } = await import('node:crypto')
  return async () => timingSafeEqual(createHmac('sha256', token).update(bytes).digest(), mac)
}
