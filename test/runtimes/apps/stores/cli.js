/**
 * The store probe on Node, Bun or Deno: `<runtime> cli.js <client>`; prints one JSON line. The configuration comes
 * from REDIS_URL, DATABASE_URL, UPSTASH_URL, UPSTASH_TOKEN and FPX_CHECKSUM_TOKEN.
 */
import { describe, probeOnce } from './probe.js'

const read = (name) => (typeof Deno === 'object' ? Deno.env.get(name) : process.env[name])
const config = { redisUrl: read('REDIS_URL'), databaseUrl: read('DATABASE_URL'), upstashUrl: read('UPSTASH_URL'), upstashToken: read('UPSTASH_TOKEN'), checksumToken: read('FPX_CHECKSUM_TOKEN') }
const name = typeof Deno === 'object' ? Deno.args[0] : process.argv[2]
try {
  console.log(JSON.stringify(await probeOnce(name, config)))
} catch (error) {
  console.log(JSON.stringify({ error: describe(error) }))
}
// A client that keeps a socket open would keep the runtime running.
if (typeof Deno === 'object') Deno.exit(0)
else process.exit(0)
