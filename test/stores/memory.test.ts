import { memoryStore } from '../../src/index.js'
import { storeContract } from './contract.js'

storeContract({
  name: 'memory',
  shared: false,
  open: async () => ({ store: memoryStore(), close: async () => {} }),
})
