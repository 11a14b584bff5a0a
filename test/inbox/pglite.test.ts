import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe } from 'vitest'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { uniqueTable } from '../stores/postgres-suites.js'
import { inboxSuite } from './suite.js'

describe('PGlite inbox', () => {
  // One embedded database: every "process" of the suite is another store instance on it.
  const db = new PGlite()
  const table = uniqueTable('inbox_pglite')
  // Starting the WebAssembly database takes seconds on a busy machine: not the first test's time.
  beforeAll(() => db.waitReady, 60_000)
  afterAll(async () => {
    await db.close()
  })
  inboxSuite({
    name: 'PGlite, transactional',
    open: async () => ({ store: postgresStore({ client: db, table, transactional: true }), close: async () => {} }),
    coarseClock: true,
  })
})
