import { PAYMENT_STATES } from '../../core/payment.js'

/**
 * Core's payment states as an SQL list, `'pending', 'failed', 'succeeded'`, for the tables' CHECK constraints. The
 * text must stay what earlier versions created (a test holds it to sql/fpx-collect.sql): CREATE TABLE IF NOT EXISTS
 * leaves an existing table's constraint as it was, so a new state would need a migration, not just a new list.
 */
export const STATE_LIST_SQL = PAYMENT_STATES.map((state) => `'${state}'`).join(', ')
