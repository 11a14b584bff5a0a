/*
 * What the PostgreSQL store does besides claims: creating its tables on first use, and deleting rows past
 * retention in batches. Each written once here for the claims table, the inbox and the timeline.
 */
import { once } from '../../contract/once.js'

export type Query = (text: string, params?: unknown[]) => Promise<unknown[]>

/** The SQLSTATE of a database error (pg and PGlite both put it in `code`). */
export const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code

// Codes a concurrent CREATE ... IF NOT EXISTS can fail with; the next attempt finds the object there.
const CREATE_RACES = new Set(['23505', '42P07', '42710'])
const UNDEFINED_TABLE = '42P01'
/** Rows deleted per statement: a large backlog is deleted in steps that each hold their locks briefly. */
export const PRUNE_BATCH = 1000

/** Runs schema statements (each `IF NOT EXISTS`), trying again when a concurrent migration raced it. */
export async function createSchema(query: Query, schema: readonly string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      for (const statement of schema) await query(statement)
      return
    } catch (error) {
      if (attempt >= 3 || !CREATE_RACES.has(codeOf(error) as string)) throw error
    }
  }
}

/**
 * Checks once, on first use, that `tables` exist (`exists`: the statement taking one's name), and creates what is
 * missing when one does not. Checked first so that an app whose role may not create tables works with tables made
 * from the SQL file. A failure (the database unreachable) is tried again at the next call.
 */
export function tableReady(query: Query, exists: string, tables: readonly string[], create: () => Promise<void>): () => Promise<void> {
  return once(async () => {
    for (const table of tables) {
      const [row] = (await query(exists, [table])) as { found: boolean }[]
      if (row?.found !== true) return create()
    }
  })
}

/**
 * Runs `statement` (taking the most rows to delete as $1 and returning `deleted`) until a batch deletes fewer than
 * it may, or `limit` rows are gone; says how many. A table that does not exist (a schema from an older version)
 * has nothing to prune.
 */
export async function pruneInBatches(query: Query, statement: string, limit = Number.MAX_SAFE_INTEGER): Promise<number> {
  let total = 0
  for (;;) {
    const batch = Math.min(PRUNE_BATCH, limit - total)
    let deleted: number
    try {
      const [row] = (await query(statement, [batch])) as { deleted: number }[]
      deleted = Number(row?.deleted ?? 0)
    } catch (error) {
      if (codeOf(error) === UNDEFINED_TABLE) return total
      throw error
    }
    total += deleted
    if (deleted < batch || total >= limit) return total
  }
}
