import type { ReceiverStore } from '../../src/index.js'
import { memoryStore } from '../../src/index.js'

/**
 * The stores with a payment book and a sweep lock that the payment-life tests run against. Each case makes a fresh,
 * empty store (its own table or key prefix) and cleans up after itself.
 */
export interface BookStoreCase {
  readonly name: string
  /** A fresh store; `shared` returns another handle on the same data (another process's view). */
  make(): Promise<{ store: ReceiverStore<unknown>; shared(): Promise<ReceiverStore<unknown>>; close(): Promise<void> }>
}

export const BOOK_STORES: BookStoreCase[] = [
  {
    name: 'memory',
    async make() {
      const store = memoryStore() as ReceiverStore<unknown>
      return { store, shared: async () => store, close: async () => {} }
    },
  },
]
