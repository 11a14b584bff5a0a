/*
 * Records read over the authenticated API (status, list, search) as the receiver takes them. Shared by
 * reconciliation and by the receiver's confirmation of a delivery, so both read a record the same way.
 */

/** A record as the form text a callback carries: booleans as true/false, null as empty, nested values left out. */
export function apiRecordText(record: Readonly<Record<string, unknown>>): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [name, value] of Object.entries(record)) {
    if (value === undefined || typeof value === 'object') {
      if (value === null) fields[name] = ''
      continue
    }
    fields[name] = String(value)
  }
  return fields
}

/** A record with a bank answer (success, failure, or B2B1 pending approval); a payment still waiting has none. */
export function hasBankAnswer(record: Readonly<Record<string, unknown>>): boolean {
  const code = record.fpx_debit_auth_code
  return record.payment_status === true || (typeof code === 'string' && code !== '') || record.payment_stage === 'payment_unsuccessful'
}
