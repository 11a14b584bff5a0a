/**
 * npx tsx bench/path-files.ts — the source files one callback passes through, from the Express adapter's body to
 * the handler and back (issue 35: at most 15), counted rather than read: the receiver with the defaults (confirmed
 * over the API, memory store, timeline on) behind Express, the emulator in a process of its own posting a real
 * signed result, and V8's precise coverage taken around the second delivery (the first loads what loads lazily).
 * A file counts when a function of it ran; the list says which, folder by folder.
 */
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { Session } from 'node:inspector/promises'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { fpxCallback } from '../adapters/express.js'
import { createReceiver } from '../src/index.js'

const ROOT = new URL('..', import.meta.url).href
const emulator = fork(new URL('./path-emulator.ts', import.meta.url), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
const next = () => new Promise<Record<string, unknown>>((resolve) => emulator.once('message', resolve))
const { baseUrl, credentials } = (await next()) as { baseUrl: string; credentials: { uid: string; authToken: string; checksumToken: string } }

let handled = 0
const receiver = createReceiver({ environment: { baseUrl }, credentials: { uid: credentials.uid, authToken: credentials.authToken, checksumToken: credentials.checksumToken } })
receiver.on('payment.succeeded', () => void handled++)
const app = express()
app.post('/fpx/callback', fpxCallback(receiver))
const server = app.listen(0, '127.0.0.1')
await once(server, 'listening')
const callbackUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fpx/callback`

async function delivered(): Promise<void> {
  const before = handled
  emulator.send(callbackUrl)
  await next()
  for (let waited = 0; handled === before && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10))
  if (handled === before) throw new Error('the callback was not handled')
}

await delivered()
const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
const ran = (coverage: Awaited<ReturnType<typeof takeCoverage>>) => {
  const counts = new Map<string, number>()
  for (const script of coverage.result) for (const fn of script.functions) counts.set(`${script.url} ${fn.functionName} ${fn.ranges[0]?.startOffset}`, fn.ranges[0]?.count ?? 0)
  return counts
}
const takeCoverage = () => session.post('Profiler.takePreciseCoverage')
const before = ran(await takeCoverage())
await delivered()
// The timeline is written just after the answer: let it run.
await receiver.flush()
const after = ran(await takeCoverage())

const files = new Map<string, Set<string>>()
for (const [key, count] of after) {
  const [url = '', name = ''] = key.split(' ')
  if (count <= (before.get(key) ?? 0) || !url.startsWith(ROOT)) continue
  const file = url.slice(ROOT.length)
  if (!file.startsWith('src/') && !file.startsWith('adapters/')) continue
  if (!files.has(file)) files.set(file, new Set())
  files.get(file)?.add(name || '(anonymous)')
}
for (const [file, names] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) console.log(`${file.padEnd(40)} ${[...names].slice(0, 6).join(', ')}`)
console.log(`\n${files.size} source files on the path of one new callback (Express, the defaults: confirmed, memory store)`)
server.close()
emulator.disconnect()
await receiver.close()
