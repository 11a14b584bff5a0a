/**
 * Deno: Deno.serve with a fetch handler, fpx-collect from node_modules (package.json beside it). Started as
 * `deno run --allow-net=127.0.0.1 --allow-env --allow-read server.js` with PORT and the FPX_* variables set.
 */
import { configFrom, createShop } from '../shop.js'

const shop = createShop(configFrom((name) => Deno.env.get(name)), () => `deno ${Deno.version.deno}`)

Deno.serve({ hostname: '127.0.0.1', port: Number(Deno.env.get('PORT')) }, shop.fetch)
