import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'

/**
 * Child processes for the runtime apps: each started in its own process group (wrangler starts workerd, next
 * starts workers), its output kept for the failure message, and stopped by its group id, never by name.
 */

export interface Command {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string | undefined>
}

export interface Started {
  readonly child: ChildProcess
  /** Everything the process printed so far, standard output and error interleaved. */
  output(): string
  /** Set when the process has exited: its code or signal. */
  exited(): string | undefined
  stop(): Promise<void>
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g

export function start(command: Command): Started {
  const child = spawn(command.file, command.args, { cwd: command.cwd, env: command.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const chunks: string[] = []
  let exit: string | undefined
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')))
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')))
  child.on('error', (error) => {
    chunks.push(`\n[harness] could not start ${command.file}: ${error.message}\n`)
    exit ??= 'error'
  })
  child.on('exit', (code, signal) => {
    exit = signal === null ? `exit code ${code}` : `signal ${signal}`
  })
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined || exit !== undefined) return
    try {
      process.kill(-child.pid, signal)
    } catch {
      // The group is already gone.
    }
  }
  return {
    child,
    // Without colours: some runtimes colour their output whatever the environment says.
    output: () => chunks.join('').replace(ANSI, ''),
    exited: () => exit,
    async stop() {
      if (exit !== undefined || child.pid === undefined) return
      const exited = once(child, 'exit')
      signalGroup('SIGTERM')
      const killer = setTimeout(() => signalGroup('SIGKILL'), 5000)
      await exited
      clearTimeout(killer)
      // Children of the group that outlived its leader (workerd under wrangler).
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // None left.
      }
    },
  }
}

/** Runs a command to its end (a build), failing with its output when it fails or takes longer than timeoutMs. */
export async function run(command: Command, timeoutMs: number): Promise<string> {
  const started = start(command)
  const timer = setTimeout(() => void started.stop(), timeoutMs)
  if (started.exited() === undefined) await once(started.child, 'close').catch(() => undefined)
  clearTimeout(timer)
  const result = started.exited()
  if (result !== 'exit code 0') throw new Error(`${[command.file, ...command.args].join(' ')} ended with ${result ?? 'no result'} (time limit ${timeoutMs / 1000} s):\n${quoted(tail(started.output()))}`)
  return started.output()
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as { port: number }
  await new Promise<void>((done) => server.close(() => done()))
  return port
}

/** The last lines of a process's output, for a failure message. */
export function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

/** A process's output inside a failure message, marked so that its stack lines are not read as the test's. */
export function quoted(output: string): string {
  return output.split('\n').map((line) => `  │ ${line}`).join('\n')
}
