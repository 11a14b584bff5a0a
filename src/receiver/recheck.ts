/*
 * The "being confirmed" page's check-again link (http/answers.ts). It names the payment by its exchange_number
 * only, signed with the merchant's Checksum Token, and never carries the result's fields: a result may echo the
 * merchant's Auth Token (`token`), and a URL ends up in browser history, access logs and Referer headers. When the
 * buyer's browser follows the link, the receiver asks the service's API about the payment and handles what it
 * shows, so only a receiver that confirms results offers the page. The exchange_number is only the value the result
 * had under that name, which a buyer can have renamed (another payment's, typed as their name): the signature carries
 * a second HMAC, of the result's order_number, and the API's record is handled only when it is of that order.
 */
import type { RawDelivery } from '../core/result/body.js'
import { bodyIsEmpty, queryText } from '../core/result/body.js'
import type { CandidateKey } from '../core/result/credentials.js'
import type { Verifier, VerifiedPayment } from '../core/result/verify.js'
import type { Recheck } from './responses.js'

const ATTEMPT = 'fpx_recheck'
const EXCHANGE = 'fpx_exchange_number'
const UID = 'fpx_uid'
const ISSUED = 'fpx_at'
const SIGNATURE = 'fpx_sig'
const OURS = [ATTEMPT, EXCHANGE, UID, ISSUED, SIGNATURE]
/** How long a link may be followed: each follow asks the API, so a link kept or shared stops costing that. */
const LINK_LIFETIME_S = 30 * 60

/** A check-again request as the link carries it: nothing in it is trusted before `signer` is found. */
export interface RecheckAsked {
  readonly attempt: number
  readonly exchangeNumber: string
  readonly uid: string
  /** When the link was made, in seconds since the epoch (signed). */
  readonly issuedAt: number
  readonly signature: string
  /** HMAC of the exchange_number, uid and the order_number of the result the link was made for (orderText). */
  readonly orderTag: string
  /** The redirect URL's own query parameters, kept on every later link. */
  readonly own: URLSearchParams
}

const signedText = (attempt: number, exchangeNumber: string, uid: string, issuedAt: number) => `recheck|${attempt}|${exchangeNumber}|${uid}|${issuedAt}`
const orderText = (exchangeNumber: string, uid: string, orderNumber: string) => `recheck order|${exchangeNumber}|${uid}|${orderNumber}`

/** The link's query for the next check of a payment, after `own` (the redirect URL's own parameters). */
export async function recheckLink(verifier: Verifier, exchangeNumber: string, uid: string, own: URLSearchParams, attempt: number, orderTag: string, issuedAt = nowS()): Promise<Recheck> {
  const query = new URLSearchParams(own)
  for (const name of OURS) query.delete(name)
  const signature = await verifier.signLink(signedText(attempt, exchangeNumber, uid, issuedAt), uid === '' ? undefined : uid)
  query.set(ATTEMPT, String(attempt))
  query.set(EXCHANGE, exchangeNumber)
  query.set(UID, uid)
  query.set(ISSUED, String(issuedAt))
  query.set(SIGNATURE, `${signature}${orderTag}`)
  return { query: query.toString(), attempt }
}

/** The first link for a verified result: its signer's uid, its order_number, and the URL's own parameters it arrived with. */
export async function firstRecheck(verifier: Verifier, verified: VerifiedPayment, uid: string): Promise<Recheck> {
  const orderTag = await verifier.signLink(orderText(verified.exchangeNumber, uid, verified.orderNumber), uid === '' ? undefined : uid)
  return recheckLink(verifier, verified.exchangeNumber, uid, new URLSearchParams(verified.unsignedQuery as Record<string, string>), 1, orderTag)
}

/** The check-again request a delivery is, when it has no body and its query carries the link's signature. */
export function recheckAsked(raw: RawDelivery): RecheckAsked | undefined {
  if (!bodyIsEmpty(raw.body)) return undefined
  let query: URLSearchParams
  try {
    query = new URLSearchParams(queryText(raw.query))
  } catch {
    return undefined
  }
  const signature = query.get(SIGNATURE)
  const exchangeNumber = query.get(EXCHANGE)
  const attempt = Number(query.get(ATTEMPT))
  const issuedAt = Number(query.get(ISSUED))
  if (signature === null || exchangeNumber === null || !Number.isSafeInteger(attempt) || attempt < 1 || !Number.isSafeInteger(issuedAt)) return undefined
  // Both HMACs, or the first alone (a link an earlier version made, without the order's: taken as expired, so that
  // a buyer holding one during a deploy gets the page saying the order is updated, not a forgery's 401). Any other
  // length matches nothing (linkSigner), and the API is not asked.
  const both = signature.length === 128
  const first = both ? signature.slice(0, 64) : signature.length === 64 ? signature : ''
  return { attempt, exchangeNumber, uid: query.get(UID) ?? '', issuedAt, signature: first, orderTag: both ? signature.slice(64) : '', own: query }
}

/** The redirect URL's own query parameters a link kept (`own`, without the link's), as a delivery's unsigned source. */
export function ownQuery(own: URLSearchParams): string | undefined {
  const query = new URLSearchParams(own)
  for (const name of OURS) query.delete(name)
  return query.size === 0 ? undefined : query.toString()
}

/** The credential set whose token signed the link, or undefined when the link is not one this receiver made. */
export function linkSigner(verifier: Verifier, asked: RecheckAsked): Promise<CandidateKey | undefined> {
  return verifier.linkSigner(signedText(asked.attempt, asked.exchangeNumber, asked.uid, asked.issuedAt), asked.uid === '' ? undefined : asked.uid, asked.signature)
}

/** Whether the API's record of the link's payment is of the order the link was made for, signed by `signer`'s token. */
export async function ofLinkedOrder(verifier: Verifier, asked: RecheckAsked, signer: CandidateKey, orderNumber: string): Promise<boolean> {
  const found = await verifier.linkSigner(orderText(asked.exchangeNumber, asked.uid, orderNumber), asked.uid === '' ? undefined : asked.uid, asked.orderTag)
  return found !== undefined && found.token === signer.token
}

/**
 * Whether a link of the receiver's own is past its lifetime (or made in the future, beyond a clock's drift), or was
 * made before links named their result's order (no second HMAC): it cannot say which order it was made for.
 */
export function expired(asked: RecheckAsked): boolean {
  if (asked.orderTag === '') return true
  const age = nowS() - asked.issuedAt
  return age > LINK_LIFETIME_S || age < -60
}

const nowS = () => Math.floor(Date.now() / 1000)
