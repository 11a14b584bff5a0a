/**
 * How operator commands (inbox, payments) reach the store the receivers use: a postgres:// or redis:// URL, one
 * connection, the store's table or prefix. Never prints the URL's password (or anything of it but the host).
 */
import type { TableName } from '../stores/postgres/sql.js'
import type { PostgresStore } from '../stores/postgres/store.js'
import type { RedisStore } from '../stores/redis/store.js'
import { UsageError } from './args.js'
import { importOptional, MissingPackage } from './optional.js'

export interface OpenedStore {
  readonly store: PostgresStore<unknown> | RedisStore
  /** PostgreSQL: the table named by --table (or the default); undefined for Redis. */
  readonly table: TableName | undefined
  /** PostgreSQL: whether a relation of this name exists (an operator's command must not create one). */
  exists(relation: string): Promise<boolean>
  close(): Promise<void>
}

/** Raised when the store answers but holds nothing to look at; its message is shown as it is. */
export class StoreUnreachable extends Error {}

/** A message with the URL's password taken out, wherever a driver may have echoed it. */
export function scrub(text: string, url: URL): string {
  let decoded = url.password
  try {
    decoded = decodeURIComponent(decoded)
  } catch {
    // A stray `%` in the password: the text as given is what a driver would echo.
  }
  const secrets = [url.password, decoded].filter((secret) => secret.length >= 3)
  return secrets.reduce((result, secret) => result.split(secret).join('***'), text)
}

/**
 * Why a store could not be opened, for the operator: our own explanations as they are, anything else (a driver's
 * error) after the host it tried, with the URL's password scrubbed. A UsageError is the caller's to rethrow.
 */
export function unreachable(error: unknown, url: URL): string {
  if (error instanceof StoreUnreachable || error instanceof MissingPackage) return error.message
  return `cannot reach ${url.protocol}//${url.host}: ${scrub((error as Error)?.message ?? String(error), url)}`
}

/** The store URL from --url or the environment variable, parsed; UsageError when there is none. */
export function storeUrl(given: string | undefined, envName: string, env: NodeJS.ProcessEnv): URL {
  const text = given ?? env[envName]
  if (text === undefined || text === '') throw new UsageError(`no store: set ${envName} or pass --url`)
  try {
    return new URL(text)
  } catch {
    throw new UsageError('the store URL does not parse')
  }
}

/** Connects to the store at `url`; `purpose` and `command` name what needs the driver when it is missing. */
export async function openStore(url: URL, table: string | undefined, prefix: string | undefined, purpose: string, command: string): Promise<OpenedStore> {
  if (url.protocol === 'postgres:' || url.protocol === 'postgresql:') {
    if (prefix !== undefined) throw new UsageError('--prefix is for Redis; PostgreSQL takes --table')
    const { default: pg } = await importOptional('pg', () => import('pg'), `${purpose} in PostgreSQL`, command)
    const { postgresStore } = await import('../stores/postgres/store.js')
    const { DEFAULT_TABLE, tableName } = await import('../stores/postgres/sql.js')
    // As ioredis does (10 s): an unreachable host is reported, not waited on until the system's TCP time-out.
    const client = new pg.Client({ connectionString: url.href, connectionTimeoutMillis: 10_000 })
    let store
    try {
      store = postgresStore({ client, ...(table === undefined ? {} : { table }) })
    } catch (error) {
      throw new UsageError(`--${(error as Error).message}`)
    }
    client.on('error', () => {})
    await client.connect()
    return {
      store,
      table: tableName(table ?? DEFAULT_TABLE),
      exists: async (relation) => (await client.query<{ found: boolean }>('SELECT to_regclass($1::text) IS NOT NULL AS found', [relation])).rows[0]?.found === true,
      close: () => client.end(),
    }
  }
  if (url.protocol === 'redis:' || url.protocol === 'rediss:') {
    if (table !== undefined) throw new UsageError('--table is for PostgreSQL; Redis takes --prefix')
    const { Redis } = await importOptional('ioredis', () => import('ioredis'), `${purpose} in Redis`, command)
    const { redisStore } = await import('../stores/redis/store.js')
    const client = new Redis(url.href, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null })
    client.on('error', () => {})
    await client.connect()
    const store = redisStore({ client, ...(prefix === undefined ? {} : { prefix }) })
    return { store, table: undefined, exists: async () => true, close: async () => void (await client.quit()) }
  }
  throw new UsageError(`the URL must start with postgres://, postgresql://, redis:// or rediss://, not ${url.protocol}//`)
}
