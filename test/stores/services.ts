import { connect } from 'node:net'
import { missing, skipping } from '../requirements.js'

/**
 * Where the store tests find their services, and what happens when one is missing: the files that need it fail,
 * saying what is missing and how to start it, on any machine (a skipped store suite would pass without testing
 * anything). FPX_SKIP=redis or FPX_SKIP=postgres skips them on purpose instead (test/requirements.ts).
 */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

const DEFAULT_PORTS: Record<string, number> = { 'redis:': 6379, 'rediss:': 6379, 'postgres:': 5432, 'postgresql:': 5432 }
const PROBE_TIMEOUT_MS = 2_000

/** The URL without its password, fit for a warning. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparsable URL)'
  }
}

function probe(url: string): Promise<string | undefined> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Promise.resolve('the URL does not parse')
  }
  // libpq-style URLs may name a Unix socket directory in ?host=.
  const socketDir = parsed.searchParams.get('host')
  const port = Number(parsed.port || DEFAULT_PORTS[parsed.protocol] || 0)
  const target = socketDir?.startsWith('/')
    ? { path: `${socketDir}/.s.PGSQL.${port}` }
    : { host: parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port }
  return new Promise((resolve) => {
    const socket = connect(target)
    const done = (problem: string | undefined) => {
      socket.destroy()
      resolve(problem)
    }
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(`no answer within ${PROBE_TIMEOUT_MS} ms`))
    socket.once('connect', () => done(undefined))
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message))
  })
}

const SERVICES = { Redis: 'redis', PostgreSQL: 'postgres' } as const

/**
 * Whether the tests needing `name` run: true when it answers at `url` (a TCP connection is enough: the suite itself
 * reports anything deeper), false when FPX_SKIP names it. Otherwise throws, so that the file fails with the reason.
 * Use with top-level await and `describe.skipIf(!available)`.
 */
export async function serviceAvailable(name: keyof typeof SERVICES, url: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (skipping(SERVICES[name], env)) return false
  const problem = await probe(url)
  if (problem === undefined) return true
  throw missing(SERVICES[name], `${name} is not reachable at ${redactUrl(url)} (${problem})`)
}
