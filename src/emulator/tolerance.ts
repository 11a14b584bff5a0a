import { readAmount } from '../core/request/amount.js'
import { internationalPhone, localPhone, strictAmount } from '../core/request/field-rules.js'
import type { CredentialSet, Merchant } from './config.js'
import { ApiError, type FieldErrors, invalidParameters } from './errors.js'
import type { EmulatorState } from './state.js'

/**
 * The fields where the real service is seen to take more than the spec's strict reading: what the vendor's own
 * shop plugins and its documentation's examples send (docs/emulator.md lists the evidence). Outside strict mode
 * each is accepted and a note says what was tolerated; the caller turns the notes into warnings. In strict mode
 * the rules are the spec's, as before.
 */
export type Notes = string[]

const quote = (value: string) => JSON.stringify(value)

/**
 * transaction_amount: strict, digits with exactly two decimals; otherwise the shared amount rule (any positive
 * decimal with at most two fraction digits), normalised to two decimals. The checksum stays over the text as
 * sent, which is what the merchant signed.
 */
export function transactionAmount(given: string | undefined, strict: boolean, problems: FieldErrors, notes: Notes): string | undefined {
  if (given === undefined || given === '') {
    problems.transaction_amount = 'is required'
    return undefined
  }
  if (strict) {
    const problem = strictAmount(given)
    if (problem !== undefined) problems.transaction_amount = problem
    return problem === undefined ? given : undefined
  }
  const reading = readAmount(given)
  if (!reading.ok) {
    problems.transaction_amount = reading.problem
    return undefined
  }
  if (reading.normalised) notes.push(`transaction_amount ${quote(given)} was normalised to ${quote(reading.text)}`)
  return reading.text
}

/**
 * buyer_phone: strict, `+` and 7 to 15 digits, required where the spec requires it. Otherwise empty and local
 * formats (`0123456789`, `012-345 6789`) pass as the plugins send them: the raw billing phone, or '' when the
 * shop has none. It must still be one line of at most 50 characters.
 */
export function buyerPhone(given: string | undefined, strict: boolean, required: boolean, problems: FieldErrors, notes: Notes): string {
  const value = given ?? ''
  if (strict) {
    if (value === '') {
      if (required) problems.buyer_phone = 'is required'
      return value
    }
    const problem = internationalPhone(value)
    if (problem !== undefined) problems.buyer_phone = problem
    return value
  }
  if (value === '') {
    if (required) notes.push(`buyer_phone was ${given === undefined ? 'not sent' : 'empty'}; accepted as empty`)
    return value
  }
  const problem = localPhone(value)
  if (problem !== undefined) problems.buyer_phone = problem
  else if (internationalPhone(value) !== undefined) notes.push(`buyer_phone ${quote(value)} is not in international format (such as +60123456789); accepted as sent`)
  return value
}

function foreignPartner(): ApiError {
  return new ApiError(403, 'partner_not_authorized', 'this partner_uid may not create payments for this merchant')
}

/**
 * Which partner a payment is made through, or null for the merchant variant. A partner_uid equal to one of the
 * merchant's own API UIDs is the merchant variant (shop plugins fill partner_uid with the uid); partner_uid
 * without uid is taken because the merchant is known by its token. A partner_uid of a partner not linked to
 * the merchant is 403 in every mode.
 */
export function partnerOf(
  state: EmulatorState,
  merchant: Merchant,
  credential: CredentialSet,
  partnerUid: string,
  uidSent: boolean,
  notes: Notes,
): string | null {
  if (partnerUid === '') return null
  if (!state.strict && !uidSent) notes.push('partner_uid was sent without uid; the merchant is identified by token')
  if (!state.strict && merchant.credentials.some((set) => set.uid === partnerUid)) {
    notes.push(
      partnerUid === credential.uid
        ? "partner_uid is the merchant's own API UID; treated as the merchant variant"
        : "partner_uid is another API UID of the same merchant; treated as the merchant variant",
    )
    return null
  }
  const partner = state.partnerByPartnerUid(partnerUid)
  if (partner === undefined || !partner.merchantIds.includes(merchant.id)) throw foreignPartner()
  return partnerUid
}

/** Strict mode keeps the spec's reading: the partner variant sends uid (422 without it). */
export function requireUidWithPartner(strict: boolean, uid: string, partnerUid: string): void {
  if (strict && partnerUid !== '' && uid === '') throw invalidParameters({ uid: 'is required with partner_uid' })
}
