/** The edge route's module scope: the receiver is created when the edge function's module is first evaluated. */
import { configFrom, createShop } from '../../shop.js'

export const shop = createShop(configFrom((name) => process.env[name]), () => (typeof EdgeRuntime === 'string' ? `edge-runtime (${EdgeRuntime})` : 'not the edge runtime'))
