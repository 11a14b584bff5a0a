/*
 * The clients the PostgreSQL store takes: a pg Pool, a pg Client or a PGlite instance, anything with pg's
 * `query(text, params)`. The store sends one statement per call, with its values as parameters.
 */

/** Anything with pg's `query(text, params)` returning `{ rows }`: a pg Pool or Client, PGlite, a transaction. */
export interface PostgresQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>
}

/** A connection checked out of a pool (pg's PoolClient). */
export interface PoolConnectionLike extends PostgresQueryable {
  release(error?: Error | boolean): void
}

/** A pg Pool: each transactional claim takes a connection of its own for as long as its handlers run. */
export interface PoolLike extends PostgresQueryable {
  connect(): Promise<PoolConnectionLike>
  readonly totalCount: number
}

/** A PGlite instance (or anything with its `transaction(callback)`). */
export interface PGliteLike extends PostgresQueryable {
  transaction<T>(callback: (tx: PostgresQueryable & { rollback(): Promise<void> }) => Promise<T>): Promise<T>
}

/** One statement: its rows. */
export type Query = (text: string, params?: unknown[]) => Promise<unknown[]>

export function isPool(client: unknown): client is PoolLike {
  const candidate = client as Partial<PoolLike>
  return typeof candidate.connect === 'function' && typeof candidate.totalCount === 'number'
}

export function isPGlite(client: unknown): client is PGliteLike {
  return typeof (client as Partial<PGliteLike>).transaction === 'function'
}

/** The SQLSTATE of a database error (pg and PGlite both put it in `code`). */
export const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code

/**
 * The name pg prepares a statement text under. pg's `name` option has a connection parse and plan a statement once
 * and from then on only execute it; most of what these statements cost the server is parsing and planning them
 * (bench/store-work.ts: a claim 0.44 ms of server CPU sent as text, 0.03 ms by name). pg refuses one name for two
 * texts on a connection, so the name is made from the text: the same in every store and in every copy of this
 * module (an app may load both its ESM and CJS builds).
 */
function nameOf(text: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return `fpx_collect_${(hash >>> 0).toString(16)}_${text.length}`
}

/** `client`'s statements as a Query, by name on pg (a Pool, a Client, a pool's connection), as text elsewhere. */
export function statementsOn(client: PostgresQueryable): Query {
  // A pg Client (what a Pool's connections are too) has escapeIdentifier; PGlite takes no statement name.
  const pg = !isPGlite(client) && (isPool(client) || typeof (client as { escapeIdentifier?: unknown }).escapeIdentifier === 'function')
  if (!pg) return async (text, params = []) => (await client.query(text, params)).rows
  const query = client.query as unknown as (statement: { name: string; text: string; values: unknown[] }) => Promise<{ rows: unknown[] }>
  return async (text, values = []) => (await query.call(client, { name: nameOf(text), text, values })).rows
}

/**
 * statementsOn(client), and for a lone pg Client one at a time: pg deprecates queueing a query on a client that
 * is running one, and concurrent deliveries would. Pools and PGlite queue them themselves.
 */
export function queryOn(client: PostgresQueryable): Query {
  const send = statementsOn(client)
  if (typeof (client as { connect?: unknown }).connect !== 'function' || isPool(client) || isPGlite(client)) return send
  let last: Promise<unknown> = Promise.resolve()
  return (text, params) => {
    const result = last.then(() => send(text, params))
    last = result.catch(() => {})
    return result
  }
}
