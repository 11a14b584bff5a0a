/** Bun: Bun.serve with a fetch handler. Started as `bun server.js` with PORT and the FPX_* variables set. */
import { configFrom, createShop } from '../shop.js'

const shop = createShop(configFrom((name) => Bun.env[name]), () => `bun ${Bun.version}`)

Bun.serve({ hostname: '127.0.0.1', port: Number(Bun.env.PORT), fetch: shop.fetch })
