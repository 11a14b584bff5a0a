/**
 * Node.js (20 and 22, the same file): Hono on @hono/node-server, the receiver through fpx-collect/web.
 * Started as `node server.js` with PORT and the FPX_* variables in the environment.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { configFrom, createShop } from '../shop.js'

const shop = createShop(configFrom((name) => process.env[name]), () => `node ${process.version}`)

const app = new Hono()
app.post('/fpx/callback', (c) => shop.callback(c.req.raw))
app.post('/fpx/redirect', (c) => shop.redirect(c.req.raw))
app.get('/status', () => shop.status())

serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT) })
