import { memoryStore, type ReceiverStore } from '../../src/index.js'
import { paymentBookContract } from './payment-book-contract.js'

/* The payment book contract on every built-in store; what only one store does is in its own payment-book file. */

const spaces = new Map<string, ReceiverStore>()
paymentBookContract({
  name: 'memory',
  // One process: the same space is the same store.
  open: async (space, options) => {
    let store = spaces.get(space)
    if (store === undefined) spaces.set(space, (store = memoryStore(options)))
    return { store, close: async () => {} }
  },
  cleanup: async () => spaces.clear(),
})
