import { offerOwnPath, ownPath } from './own-path.js'
import type { Claim, ClaimRequest, LeaseRef } from './store.js'

/**
 * A store in this process (the memory store) can answer a claim or a completion at once; through its promise
 * API every delivery spent two promises and two trips through the microtask queue on answers that were ready.
 * Such a store offers the claim and complete its promise methods stand in for (see own-path.ts), and the receiver
 * calls them directly while the store's claim and complete are still its own.
 *
 * A claim the store takes asks its request for `ownExchangeNumber()`: the exchange_number as a string of its own
 * (detached.ts), made only then (a duplicate costs no copy), which the store keeps as the payment's key; the receiver
 * hands the same string to the completion and to the timeline, so the store finds it again by identity.
 */
const LOCAL_CLAIMS = Symbol('fpx-collect.localClaims')
const STANDS_FOR = ['claim', 'complete']

/** A claim request that gives the store the exchange_number as a string of its own when the store keeps it. */
export interface OwningClaimRequest extends ClaimRequest {
  ownExchangeNumber(): string
}

export interface LocalClaims {
  claim(request: OwningClaimRequest): Claim
  complete(lease: LeaseRef): boolean
}

/** Gives `store` the synchronous path for as long as its claim and complete are the ones it has now. */
export function offerLocalClaims<T extends object>(store: T, local: LocalClaims): T {
  return offerOwnPath(store, LOCAL_CLAIMS, STANDS_FOR, local)
}

/** The store's synchronous path, if it has one and its claim and complete are still the ones it came with. */
export function localClaims(store: object): LocalClaims | undefined {
  return ownPath<LocalClaims>(store, LOCAL_CLAIMS, STANDS_FOR)
}
