import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { WorkerMessage } from './protocol.js'

const WORKER_PATH = fileURLToPath(new URL('./worker.ts', import.meta.url))
// Resolved here rather than by name so the workers start whatever the driver's working directory.
const TSX = import.meta.resolve('tsx')
// Only catches a worker that never starts: on two cores shared with the whole test suite and other jobs, starting
// (tsx compiling the receiver) took over 30 s.
const READY_TIMEOUT_MS = 180_000

/** One worker process. Requests count against the process, not its slot, so a kill reads its own in-flight. */
export class Worker {
  inFlight = 0
  alive = true
  readonly exited: Promise<void>

  constructor(
    readonly slot: number,
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('exit', () => resolve())
    })
    child.once('exit', () => {
      this.alive = false
    })
  }

  get pid(): number {
    return this.child.pid as number
  }
}

export interface Kill {
  slot: number
  pid: number
  /** Requests sent to it and not answered when it died: a bound on the handler runs the kill could cut. */
  inFlight: number
  /** Milliseconds from the kill until the replacement answered ready. */
  restartMs: number
}

function startWorker(slot: number, settings: object, path: string): Promise<Worker> {
  const child = spawn(process.execPath, ['--import', TSX, path], {
    env: { ...process.env, SOAK_WORKER: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    const fail = (message: string) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(`worker ${slot} did not start: ${message}`))
    }
    const timer = setTimeout(() => fail(`not ready within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS)
    child.once('error', (error) => fail(error.message))
    child.once('exit', (code, signal) => fail(`exited (${signal ?? code}) before it was ready`))
    child.on('message', (message: WorkerMessage) => {
      if (message.type === 'failed') return fail(message.message)
      clearTimeout(timer)
      child.removeAllListeners('exit')
      resolve(new Worker(slot, child, message.port))
    })
  })
}

/**
 * The receiver processes of one soak run: started together, killed and restarted one at a time. `settings` reach
 * each worker as SOAK_WORKER (JSON); `path` is the worker's script (soak/worker.ts unless another soak says).
 */
export class Fleet<S extends object = object> {
  private readonly slots: (Worker | undefined)[] = []
  /** Every process that ever ran, by pid, so that ledger rows can be traced to a live or a killed one. */
  readonly pids = new Set<number>()
  readonly kills: Kill[] = []

  constructor(
    private readonly settings: S,
    private readonly path: string = WORKER_PATH,
  ) {}

  async start(count: number): Promise<void> {
    const started = await Promise.allSettled(Array.from({ length: count }, (_, slot) => startWorker(slot, this.settings, this.path)))
    for (const result of started) if (result.status === 'fulfilled') this.adopt(result.value)
    const failed = started.find((result) => result.status === 'rejected')
    if (failed !== undefined) {
      await this.stop()
      throw (failed as PromiseRejectedResult).reason
    }
  }

  private adopt(worker: Worker): void {
    this.slots[worker.slot] = worker
    this.pids.add(worker.pid)
  }

  get size(): number {
    return this.slots.length
  }

  /** Requests sent to live workers and not yet answered. */
  get inFlight(): number {
    return this.slots.reduce((sum, worker) => sum + (worker?.alive ? worker.inFlight : 0), 0)
  }

  /** A live worker, `preferred` when it is up; undefined only while every worker is down. */
  pick(preferred: number): Worker | undefined {
    for (let i = 0; i < this.slots.length; i++) {
      const worker = this.slots[(preferred + i) % this.slots.length]
      if (worker?.alive) return worker
    }
    return undefined
  }

  /**
   * SIGKILLs a worker at a busy moment: the busiest one once it has `threshold` requests in flight, a bar that
   * falls to 1 over `windowMs` (and after twice that, whatever it has). A kill while the driver's lanes sleep
   * on Retry-After would cut nothing. What it had in flight is read in the same tick as the kill, so no request
   * starts or ends in between. A replacement starts on a new port; deliveries go to the others meanwhile.
   */
  async killBusy(threshold: number, windowMs: number): Promise<Kill> {
    const started = Date.now()
    let victim: Worker | undefined
    for (;;) {
      victim = undefined
      for (const worker of this.slots) if (worker?.alive && (victim === undefined || worker.inFlight > victim.inFlight)) victim = worker
      if (victim === undefined) throw new Error('no worker is running')
      const elapsed = Date.now() - started
      if (victim.inFlight >= Math.max(1, Math.ceil(threshold * (1 - elapsed / windowMs))) || elapsed >= 2 * windowMs) break
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    return this.kill(victim)
  }

  /** The live worker of this pid, if any. */
  byPid(pid: number): Worker | undefined {
    return this.slots.find((worker) => worker?.alive === true && worker.pid === pid)
  }

  /** SIGKILLs `victim` and starts its replacement on a new port. */
  async kill(victim: Worker): Promise<Kill> {
    victim.alive = false
    this.slots[victim.slot] = undefined
    const inFlight = victim.inFlight
    const killedAt = Date.now()
    victim.child.kill('SIGKILL')
    await victim.exited
    this.adopt(await startWorker(victim.slot, this.settings, this.path))
    const kill = { slot: victim.slot, pid: victim.pid, inFlight, restartMs: Date.now() - killedAt }
    this.kills.push(kill)
    return kill
  }

  /** Inbox mode: ends the handler outage in every worker, and in those started from now on. */
  recover(at: number): void {
    const inbox = (this.settings as { inbox?: { outageEndAt: number } }).inbox
    if (inbox !== undefined) inbox.outageEndAt = at
    for (const worker of this.slots) if (worker?.alive) worker.child.send({ type: 'recover', at })
  }

  async stop(): Promise<void> {
    const running = this.slots.filter((worker): worker is Worker => worker !== undefined)
    this.slots.length = 0
    for (const worker of running) {
      worker.alive = false
      worker.child.kill('SIGTERM')
    }
    const timeout = new Promise<'timeout'>((resolve) => setTimeout(resolve, 10_000, 'timeout').unref())
    for (const worker of running) if ((await Promise.race([worker.exited, timeout])) === 'timeout') worker.child.kill('SIGKILL')
  }
}
