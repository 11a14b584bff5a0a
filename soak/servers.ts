/*
 * Private Redis and PostgreSQL servers for runs that restart the store: never the system ones, which other
 * tests use. Each runs on a free port with its own directory under the temp dir, can be crashed (SIGKILL /
 * immediate shutdown) and started again on the same port and data, and is stopped and removed at the end.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { accessSync, constants, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once something accepts TCP connections on `port`, or rejects after `ms`. */
async function waitForPort(port: number, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > until) throw new Error(`${what} did not start listening on port ${port} within ${ms} ms`)
    await sleep(50)
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Debian keeps PostgreSQL's server programs out of PATH, under /usr/lib/postgresql/<version>/bin. */
const DEBIAN_POSTGRES = '/usr/lib/postgresql'

/**
 * Where a server program is: the first on PATH, else (pg_ctl, initdb) under the newest of Debian's
 * /usr/lib/postgresql/<version>/bin. Undefined when it is in neither.
 */
export function serverBinary(name: 'redis-server' | 'pg_ctl' | 'initdb', env: NodeJS.ProcessEnv = process.env, debianRoot = DEBIAN_POSTGRES): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) if (dir !== '' && executable(join(dir, name))) return join(dir, name)
  if (name === 'redis-server') return undefined
  let versions: string[]
  try {
    versions = readdirSync(debianRoot)
  } catch {
    return undefined
  }
  for (const version of versions.sort((a, b) => Number(b) - Number(a) || b.localeCompare(a))) {
    const path = join(debianRoot, version, 'bin', name)
    if (executable(path)) return path
  }
  return undefined
}

function required(name: 'redis-server' | 'pg_ctl' | 'initdb'): string {
  const path = serverBinary(name)
  if (path === undefined) throw new Error(`${name} is neither on PATH nor under ${DEBIAN_POSTGRES}/<version>/bin`)
  return path
}

export type RedisPersistence = 'none' | 'everysec' | 'always'

export class PrivateRedis {
  private child: ChildProcess | undefined
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly args: string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** `persistence`: none (save '' and no AOF), or AOF with that appendfsync. `extra`: more redis-server flags. */
  static async start(persistence: RedisPersistence, extra: string[] = []): Promise<PrivateRedis> {
    const port = await freePort()
    const dir = mkdtempSync(join(tmpdir(), 'fpx-private-redis-'))
    const aof = persistence === 'none' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', persistence]
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...aof, '--daemonize', 'no', ...extra]
    const redis = new PrivateRedis(port, dir, args)
    await redis.launch()
    return redis
  }

  private async launch(): Promise<void> {
    const child = spawn(required('redis-server'), this.args, { stdio: 'ignore' })
    this.child = child
    await Promise.race([
      waitForPort(this.port, 10_000, 'redis-server'),
      new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) at start`)))),
    ])
  }

  /** A crash: SIGKILL, nothing flushed beyond what appendfsync already wrote; then the same server again. */
  async crashAndRestart(downMs: number): Promise<void> {
    await this.kill()
    await sleep(downMs)
    await this.launch()
  }

  private async kill(): Promise<void> {
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }

  async stop(): Promise<void> {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** PostgreSQL's tools refuse to run as root: run them as the postgres user then. */
function asPostgres(name: 'pg_ctl' | 'initdb', args: string[]): { file: string; args: string[] } {
  const command = required(name)
  if (process.getuid?.() !== 0) return { file: command, args }
  return { file: 'runuser', args: ['-u', 'postgres', '--', command, ...args] }
}

export class PrivatePostgres {
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`
  }

  static async start(): Promise<PrivatePostgres> {
    const port = await freePort()
    const dir = mkdtempSync(join(tmpdir(), 'fpx-private-pg-'))
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir])
    const init = asPostgres('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync'])
    execFileSync(init.file, init.args, { stdio: 'ignore' })
    const pg = new PrivatePostgres(port, dir)
    pg.ctl(['start', '-w', '-t', '60', '-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`])
    await waitForPort(port, 30_000, 'PostgreSQL')
    return pg
  }

  private ctl(args: string[]): void {
    const command = asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), ...args])
    execFileSync(command.file, command.args, { stdio: 'ignore' })
  }

  /** A crash: immediate shutdown (no checkpoint; open transactions are lost and recovered from WAL), then start. */
  async crashAndRestart(downMs: number): Promise<void> {
    this.ctl(['stop', '-m', 'immediate', '-w'])
    await sleep(downMs)
    this.ctl(['start', '-w', '-t', '60', '-l', join(this.dir, 'log'), '-o', `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c max_connections=200`])
    await waitForPort(this.port, 30_000, 'PostgreSQL')
  }

  async stop(): Promise<void> {
    try {
      this.ctl(['stop', '-m', 'fast', '-w'])
    } finally {
      rmSync(this.dir, { recursive: true, force: true })
    }
  }
}
