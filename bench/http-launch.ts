/**
 * Starting bench/http.ts's servers (each in a child process of its own, unless BENCH_IN_PROCESS=1) and loading them
 * with autocannon, for whole runs (http.ts) and for turns (http-turns.ts).
 */
import { execFileSync, fork } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { type CallbackPool, Feed, type RequestFeed, WebhookFeed } from './http-bodies.js'
import { CALLBACK_PATH, type FromServer, type Scenario, type ServerStats, startServer, type ToServer, WEBHOOK_PATH, WEBHOOK_SECRET } from './http-servers.js'
import { envNumber } from './env.js'

export const CONNECTIONS = Math.floor(envNumber('BENCH_CONNECTIONS', 10, 1))
export const IN_PROCESS = process.env.BENCH_IN_PROCESS === '1'
const PROFILE_DIR = process.env.BENCH_CPU_PROF
const SERVERS_FILE = fileURLToPath(new URL('./http-servers.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * BENCH_PIN=1 (Linux, taskset): the servers on the last CPU, this process (the load generator) on the others, all
 * threads of each, so that the scheduler never puts a server and the load on one CPU for part of a run.
 */
const PIN = process.env.BENCH_PIN === '1'
const SERVER_CPU = availableParallelism() - 1
function pin(pid: number, cpus: string | number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpus), String(pid)], { stdio: 'ignore' })
}
if (PIN) pin(process.pid, SERVER_CPU === 0 ? 0 : `0-${SERVER_CPU - 1}`)

/** The requests a scenario is sent: octokit's signed webhooks, the others the pool's callbacks. */
export function feedFor(scenario: Scenario, pool: CallbackPool, webhookBytes: number): RequestFeed {
  return scenario === 'octokit' ? new WebhookFeed(webhookBytes, WEBHOOK_SECRET) : new Feed(pool)
}

export function pathFor(scenario: Scenario): string {
  return scenario === 'octokit' ? WEBHOOK_PATH : CALLBACK_PATH
}

export interface ServerHandle {
  port: number
  stats(): Promise<ServerStats>
  close(): Promise<void>
}

export async function launch(scenario: Scenario): Promise<ServerHandle> {
  if (IN_PROCESS) {
    const server = await startServer(scenario)
    return { port: server.port, stats: async () => server.stats(), close: () => server.close() }
  }
  const profile = PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${scenario}.cpuprofile`]
  const child = fork(SERVERS_FILE, [scenario], { cwd: ROOT, execArgv: ['--import', 'tsx', ...profile] })
  if (PIN && child.pid !== undefined) pin(child.pid, SERVER_CPU)
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  const reply = <T extends FromServer['type']>(type: T, request?: ToServer) =>
    new Promise<Extract<FromServer, { type: T }>>((resolve, reject) => {
      const onMessage = (message: FromServer): void => {
        if (message.type !== type) return
        child.off('message', onMessage)
        resolve(message as Extract<FromServer, { type: T }>)
      }
      child.on('message', onMessage)
      void exited.then((code) => reject(new Error(`the ${scenario} server exited (code ${code}) before answering "${type}"`)))
      if (request !== undefined) child.send(request)
    })
  const { port } = await reply('listening').catch((error: unknown) => {
    child.kill()
    throw error
  })
  return {
    port,
    stats: async () => (await reply('stats', { type: 'stats' })).stats,
    close: async () => {
      child.send({ type: 'close' } satisfies ToServer)
      const code = await exited
      if (code !== 0) throw new Error(`the ${scenario} server exited with code ${code}`)
    },
  }
}

/** Loads the server for `seconds`, or until `{ requests }` have been sent. */
export function load(port: number, path: string, feed: RequestFeed, until: number | { requests: number }): Promise<autocannon.Result> {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    ...(typeof until === 'number' ? { duration: until } : { amount: until.requests }),
    requests: [
      {
        method: 'POST',
        path,
        setupRequest: (request) => {
          const next = feed.take()
          return { ...request, headers: next.headers, body: next.body }
        },
      },
    ],
  })
}

/** What went wrong in a load run: answers other than 2xx, connection errors, mismatches and resets. */
export function runProblems(label: string, run: autocannon.Result): string[] {
  const problems: string[] = []
  if (run.non2xx > 0) problems.push(`${label}: ${run.non2xx} non-2xx responses ${JSON.stringify(run.statusCodeStats)}`)
  if (run.errors > 0) problems.push(`${label}: ${run.errors} connection errors (${run.timeouts} timeouts)`)
  if (run.mismatches + run.resets > 0) problems.push(`${label}: ${run.mismatches} mismatches, ${run.resets} resets`)
  return problems
}
