/**
 * The processes of bench/fleet.ts (the emulator, each receiver of the fleet) are children that answer the parent's
 * questions over the IPC channel: one small request/reply protocol for both, so that the parent measures each
 * process's own CPU and event loop, not its own.
 */
import { fork } from 'node:child_process'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** BENCH_CPU_PROF=dir: each child writes a V8 CPU profile there when it closes (as in bench/http.ts). */
const PROFILE_DIR = process.env.BENCH_CPU_PROF

type Request = { id: number; type: string; payload?: unknown }
type Reply = { id: number; value?: unknown; error?: string } | { ready: unknown }

export interface Child {
  readonly pid: number
  call<T>(type: string, payload?: unknown): Promise<T>
  /** Asks the child to close (its 'close' handler) and waits for it to exit. */
  close(): Promise<void>
}

/**
 * Starts `file` (a bench/ module run under tsx, as the other benches' children) with `env` added to this process's
 * environment, and waits for its ready value.
 */
export async function startChild<TReady>(file: string, env: Record<string, string>, label: string): Promise<{ child: Child; ready: TReady }> {
  const profile = PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${label.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`]
  const forked = fork(fileURLToPath(new URL(file, import.meta.url)), [], { cwd: ROOT, execArgv: ['--import', 'tsx', ...profile], env: { ...process.env, ...env } })
  const exited = new Promise<number | null>((resolve) => forked.once('exit', resolve))
  const waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  let nextId = 1
  let onReady: ((value: unknown) => void) | undefined
  forked.on('message', (message: Reply) => {
    if ('ready' in message) return onReady?.(message.ready)
    const pending = waiting.get(message.id)
    waiting.delete(message.id)
    if (message.error !== undefined) pending?.reject(new Error(`${label}: ${message.error}`))
    else pending?.resolve(message.value)
  })
  void exited.then((code) => {
    for (const pending of waiting.values()) pending.reject(new Error(`${label} exited (code ${code})`))
    waiting.clear()
  })
  const ready = await Promise.race([
    new Promise<unknown>((resolve) => (onReady = resolve)),
    exited.then((code) => Promise.reject(new Error(`${label} exited (code ${code}) before it was ready`))),
  ])
  const child: Child = {
    pid: forked.pid as number,
    call: <T>(type: string, payload?: unknown) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++
        waiting.set(id, { resolve: resolve as (value: unknown) => void, reject })
        forked.send({ id, type, payload } satisfies Request)
      }),
    async close() {
      if (forked.exitCode !== null || !forked.connected) return
      await child.call('close').catch(() => undefined)
      const code = await exited
      if (code !== 0) throw new Error(`${label} exited with code ${code}`)
    },
  }
  return { child, ready: ready as TReady }
}

/** What every child reports about itself: CPU so far and its event loop's delay since the last report. */
export interface ProcessSample {
  cpuMicros: number
  /** 99th percentile of the event loop's delay since the previous sample, ms. */
  lagP99Ms: number
}

const loop = monitorEventLoopDelay({ resolution: 10 })
loop.enable()

export function processSample(): ProcessSample {
  const { user, system } = process.cpuUsage()
  const lagP99Ms = loop.count === 0 ? 0 : loop.percentile(99) / 1e6
  loop.reset()
  return { cpuMicros: user + system, lagP99Ms }
}

/**
 * The child's side: answers the parent's requests with `handlers` (each may be async) after announcing `ready`.
 * `close` ends the child by letting its event loop run dry after the handler, never process.exit().
 */
export function serveParent(handlers: Record<string, (payload: unknown) => unknown>, ready: unknown): void {
  const send = (message: Reply) => process.send?.(message)
  // The parent gone means nobody will ask us to close: go with it rather than linger.
  const orphaned = (): never => process.exit(1)
  process.once('disconnect', orphaned)
  process.on('message', (request: Request) => {
    const handler = request.type === 'sample' ? () => processSample() : handlers[request.type]
    if (handler === undefined) return send({ id: request.id, error: `no handler for ${request.type}` })
    Promise.resolve()
      .then(() => handler(request.payload))
      .then(
        (value) => {
          send({ id: request.id, value })
          if (request.type === 'close') {
            process.off('disconnect', orphaned)
            process.disconnect()
          }
        },
        (error: unknown) => send({ id: request.id, error: error instanceof Error ? error.message : String(error) }),
      )
  })
  send({ ready })
}
