/**
 * A store of this package can offer the receiver a faster way to do what some of its public methods do (the
 * memory store's synchronous claims, its timeline taking traces whole). The receiver takes it only while those
 * methods are still the store's own: a wrapper that replaces one (to log, to count, to fail on purpose in a test)
 * is called as it always was. Kept under a Symbol no merchant's store implements, not enumerable, so a copy made
 * with `{ ...store }` has none.
 */

interface Offered<T> {
  /** The methods the path stands in for, as they were when it was offered. */
  readonly methods: readonly unknown[]
  readonly path: T
}

type Methods = Readonly<Record<string, unknown>>

/** Gives `store` the path under `key`, for as long as its methods named `stands` are the ones it has now. */
export function offerOwnPath<S extends object, T>(store: S, key: symbol, stands: readonly string[], path: T): S {
  const offered: Offered<T> = { methods: stands.map((name) => (store as Methods)[name]), path }
  Object.defineProperty(store, key, { value: offered, enumerable: false })
  return store
}

/** The path under `key`, if `store` has one and its methods named `stands` are still the ones it came with. */
export function ownPath<T>(store: object, key: symbol, stands: readonly string[]): T | undefined {
  const offered = (store as { [key: symbol]: Offered<T> | undefined })[key]
  if (offered === undefined) return undefined
  for (let i = 0; i < stands.length; i++) if ((store as Methods)[stands[i] as string] !== offered.methods[i]) return undefined
  return offered.path
}
