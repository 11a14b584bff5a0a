/*
 * Named prepared statements for the statements every delivery runs (claim, inspect, complete, release), on pg
 * only: a name lets pg parse and plan a statement once per connection and then send just Bind/Execute, where an
 * unnamed query is parsed, described and planned again on every call. PGlite and other queryables take only
 * `query(text, params)`, so they get the text as before.
 */
import { createHash } from 'node:crypto'
import type { Begin, PostgresQueryable } from './transactions.js'
import { isPGlite, isPool } from './transactions.js'

type ConfigQuery = (config: { name: string; text: string; values: unknown[] }) => Promise<{ rows: unknown[] }>

/** A pg Pool, or a pg Client (its escapeIdentifier sets it apart from other things with query()). */
function isPg(client: unknown): boolean {
  if (isPGlite(client)) return false
  return isPool(client) || typeof (client as { escapeIdentifier?: unknown }).escapeIdentifier === 'function'
}

export interface Prepared {
  /** `target` sending the statements named; the same object when the client is not pg. */
  wrap<Q extends PostgresQueryable>(target: Q): PostgresQueryable
  /** Transactions whose queries send the statements named. */
  begin(begin: Begin): Begin
}

/**
 * Names `texts` after their contents, so that stores for different tables on one pool never give one name two
 * texts (pg refuses that), and two stores for the same table share the statements.
 */
export function preparedStatements(client: unknown, texts: readonly string[]): Prepared {
  if (!isPg(client)) return { wrap: (target) => target, begin: (begin) => begin }
  const names = new Map(texts.map((text) => [text, `fpx_collect_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`]))
  const send = (target: PostgresQueryable, text: string, params: unknown[] = []) => {
    const name = names.get(text)
    if (name === undefined) return target.query(text, params)
    return (target.query as unknown as ConfigQuery).call(target, { name, text, values: params })
  }
  return {
    wrap: (target) => ({ query: (text, params) => send(target, text, params) }),
    begin: (begin) => async () => {
      const open = await begin()
      const handle = open.handle as PostgresQueryable
      open.query = async (text, params) => (await send(handle, text, params)).rows
      return open
    },
  }
}
