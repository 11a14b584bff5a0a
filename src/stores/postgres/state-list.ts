import { PAYMENT_STATES } from '../../core/payment.js'
import { RESULT_SOURCES } from '../../contract/delivery-result.js'

const sqlList = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ')

/**
 * Core's payment states as an SQL list, `'pending', 'failed', 'succeeded'`, for the tables' CHECK constraints. The
 * text must stay what earlier versions created (a test holds it to sql/fpx-collect.sql): CREATE TABLE IF NOT EXISTS
 * leaves an existing table's constraint as it was, so a new state would need a migration, not just a new list.
 */
export const STATE_LIST_SQL = sqlList(PAYMENT_STATES)

/** The contract's result sources, `'callback', 'redirect', 'reconcile'`, for the inbox table's CHECK (the same caveat). */
export const SOURCE_LIST_SQL = sqlList(RESULT_SOURCES)
