/**
 * The service's own payment-session example sends `transaction_amount: 200` and answers `"200.00"`, and shop
 * plugins send whatever their cart total prints as. So an amount is any positive decimal with at most two
 * fraction digits, given as text or a number; it travels (and is signed) as text with exactly two decimals.
 * The emulator and the client share this rule so the client never refuses what the emulator takes.
 */
export type AmountReading =
  | { readonly ok: true; readonly text: string; readonly normalised: boolean }
  | { readonly ok: false; readonly problem: string }

const DECIMAL = /^(\d{1,9})(?:\.(\d{1,2}))?$/

export function readAmount(input: string | number): AmountReading {
  if (typeof input === 'number' && !Number.isFinite(input)) return { ok: false, problem: 'must be a number' }
  const given = typeof input === 'number' ? String(input) : input
  const found = DECIMAL.exec(given)
  if (found === null) {
    if (/^\d+\.\d{3,}$/.test(given)) return { ok: false, problem: 'must have at most two fraction digits' }
    if (/^-\d/.test(given)) return { ok: false, problem: 'must be more than 0.00' }
    if (/^\d{10,}(\.\d{1,2})?$/.test(given)) return { ok: false, problem: 'must be at most 999999999.99' }
    return { ok: false, problem: 'must be a decimal number such as 100.20' }
  }
  const text = `${found[1]}.${(found[2] ?? '').padEnd(2, '0')}`
  if (/^0+\.00$/.test(text)) return { ok: false, problem: 'must be more than 0.00' }
  return { ok: true, text, normalised: text !== given }
}
