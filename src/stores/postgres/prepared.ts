/*
 * Prepared statements for the statements every delivery runs (claim, inspect, complete, release): parsed and
 * planned once per session instead of on every call, which is most of what these statements cost.
 *   pg:     named statements in the protocol; pg sends Parse once per connection, then just Bind/Execute.
 *   PGlite: its query() takes no statement name, so SQL's own PREPARE, once per instance (one session), then
 *           EXECUTE with the values written as literals. Measured on PGlite 0.5 (bench/stores.ts), the text
 *           of a claim + complete cost 2.0x the floor, prepared 1.2x.
 * Other queryables get the text as before.
 */
import { createHash } from 'node:crypto'
import { codeOf } from './upkeep.js'
import type { Begin, PGliteLike, PostgresQueryable } from './transactions.js'
import { isPGlite, isPool } from './transactions.js'

type ConfigQuery = (config: { name: string; text: string; values: unknown[] }) => Promise<{ rows: unknown[] }>

const DUPLICATE_PREPARED_STATEMENT = '42P05'
const UNKNOWN_PREPARED_STATEMENT = '26000'

/** A pg Pool, or a pg Client (its escapeIdentifier sets it apart from other things with query()). */
function isPg(client: unknown): boolean {
  if (isPGlite(client)) return false
  return isPool(client) || typeof (client as { escapeIdentifier?: unknown }).escapeIdentifier === 'function'
}

export interface Prepared {
  /** `target` sending the statements prepared; the same object when the client prepares nothing. */
  wrap<Q extends PostgresQueryable>(target: Q): PostgresQueryable
  /** Transactions whose queries send the statements prepared. */
  begin(begin: Begin): Begin
}

/** Names `texts` after their contents: stores for different tables never give one name two texts (pg refuses that). */
const namesOf = (texts: readonly string[]) =>
  new Map(texts.map((text) => [text, `fpx_collect_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`]))

/**
 * PGlite itself, not just anything with transaction() (a pooled wrapper could PREPARE on one connection and
 * EXECUTE on another): execProtocol is its own.
 */
function isPGliteItself(client: unknown): client is PGliteLike {
  return isPGlite(client) && typeof (client as { execProtocol?: unknown }).execProtocol === 'function'
}

export function preparedStatements(client: unknown, texts: readonly string[]): Prepared {
  if (isPGliteItself(client)) return sqlPrepared(client, namesOf(texts))
  if (!isPg(client)) return { wrap: (target) => target, begin: (begin) => begin }
  const names = namesOf(texts)
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

/**
 * A value as an SQL literal, or undefined for one this does not write (the text is sent with it as a parameter
 * instead). Strings are dollar-quoted with a tag the value cannot end early: nothing inside is an escape, so no
 * setting (standard_conforming_strings, backslash_quote, a client encoding) changes how it reads. The statements
 * cast every parameter, so an untyped literal takes the parameter's type as a bound value would.
 */
export function literal(value: unknown): string | undefined {
  if (value === null) return 'NULL'
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined
  if (typeof value !== 'string') return undefined
  let tag = '$fpx$'
  // The first closing tag after the value must be ours: not one inside it, nor one its last characters begin.
  while (`${value}${tag}`.indexOf(tag) !== value.length) tag = `${tag.slice(0, -1)}x$`
  return `${tag}${value}${tag}`
}

/** The statements each PGlite instance has prepared: one session, shared by every store on it. */
const preparedOn = new WeakMap<object, Map<string, Promise<void>>>()

function sqlPrepared(db: PGliteLike, names: Map<string, string>): Prepared {
  const done = preparedOn.get(db) ?? new Map<string, Promise<void>>()
  preparedOn.set(db, done)
  // Set once this store's statements are all prepared, so that a delivery does not wait on a promise for each.
  let ready = false
  // Outside any transaction, so that a failed PREPARE spoils none; PREPARE is not undone by a rollback anyway.
  const prepareAll = async () => {
    if (ready) return
    await Promise.all(
      [...names].map(([text, name]) => {
        let prepared = done.get(name)
        if (prepared === undefined) {
          prepared = db.query(`PREPARE ${name} AS ${text}`).then(
            () => {},
            (error: unknown) => {
              // Prepared by an earlier store on this instance: the name is the text's hash, so the text is the same.
              if (codeOf(error) === DUPLICATE_PREPARED_STATEMENT) return
              done.delete(name)
              throw error
            },
          )
          done.set(name, prepared)
        }
        return prepared
      }),
    )
    ready = true
  }
  const executeText = (text: string, params: unknown[] = []) => {
    const name = names.get(text)
    if (name === undefined) return undefined
    const values = params.map(literal)
    if (values.includes(undefined)) return undefined
    return `EXECUTE ${name}(${values.join(', ')})`
  }
  /** Whether an EXECUTE failed because the session lost its statements (DEALLOCATE ALL, DISCARD ALL). */
  const forgotten = (error: unknown) => {
    if (codeOf(error) !== UNKNOWN_PREPARED_STATEMENT) return false
    ready = false
    done.clear()
    return true
  }
  return {
    wrap: (target) => ({
      async query(text, params) {
        const execute = executeText(text, params)
        if (execute === undefined) return target.query(text, params)
        await prepareAll()
        try {
          return await target.query(execute)
        } catch (error) {
          if (!forgotten(error)) throw error
          await prepareAll()
          return target.query(execute)
        }
      },
    }),
    // Prepared before the transaction opens; within it, a statement the session lost fails the transaction,
    // whose delivery is then answered with an error and redelivered, by which time the statements are back.
    begin: (begin) => async () => {
      await prepareAll()
      const open = await begin()
      const handle = open.handle as PostgresQueryable
      open.query = async (text, params) => {
        const execute = executeText(text, params)
        try {
          return (await (execute === undefined ? handle.query(text, params) : handle.query(execute))).rows
        } catch (error) {
          forgotten(error)
          throw error
        }
      }
      return open
    },
  }
}
