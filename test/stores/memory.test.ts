import { memoryStore } from '../../src/index.js'
import { storeContract } from './contract.js'

storeContract({
  name: 'memory',
  shared: false,
  // Its bound on a payment's timeline is tested in memory-timeline.test.ts: a read cannot see past it.
  open: async (options) => ({ store: memoryStore(options), close: async () => {} }),
})
