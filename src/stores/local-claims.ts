import type { Claim, ClaimRequest, LeaseRef } from './store.js'

/**
 * A store in this process (the memory store) can answer a claim or a completion at once; through its promise
 * API every delivery spent two promises and two trips through the microtask queue on answers that were ready.
 * Such a store carries, under this key, the claim and complete its promise methods stand in for, and the
 * receiver calls them directly for as long as the store's own methods are still the ones it came with: a wrapper
 * that replaces claim or complete (to log, to count, to fail on purpose in a test) is called as it always was.
 * Internal, like APPEND_TRACES: a Symbol no merchant's store implements, not enumerable.
 */
export const LOCAL_CLAIMS = Symbol('fpx-collect.localClaims')

export interface LocalClaims {
  claim(request: ClaimRequest): Claim
  complete(lease: LeaseRef): boolean
}

interface Registered {
  readonly claim: unknown
  readonly complete: unknown
  readonly local: LocalClaims
}

/** Gives `store` the synchronous path for as long as its claim and complete are the ones it has now. */
export function offerLocalClaims<T extends { claim: unknown; complete: unknown }>(store: T, local: LocalClaims): T {
  const registered: Registered = { claim: store.claim, complete: store.complete, local }
  Object.defineProperty(store, LOCAL_CLAIMS, { value: registered, enumerable: false })
  return store
}

/** The store's synchronous path, if it has one and its claim and complete are still the ones it came with. */
export function localClaims(store: { claim: unknown; complete: unknown }): LocalClaims | undefined {
  const registered = (store as { [LOCAL_CLAIMS]?: Registered })[LOCAL_CLAIMS]
  return registered !== undefined && registered.claim === store.claim && registered.complete === store.complete ? registered.local : undefined
}
