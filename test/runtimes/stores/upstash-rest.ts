import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createClient } from 'redis'

/**
 * A stand-in for Upstash's Redis REST API on 127.0.0.1, in front of the local Redis: what @upstash/redis sends
 * (POST / with the command as a JSON array, `Authorization: Bearer <token>`, `Upstash-Encoding: base64`) and what
 * it reads back ({"result": ...} with strings base64-encoded, {"error": "..."} with 400). Only the protocol is
 * stood in for: the commands run on a real Redis. Whether Upstash's servers take the store's commands (SET NX
 * GET, EVALSHA with cjson and TIME) is a matter of their documentation (docs/runtimes.md).
 */

export interface UpstashStandIn {
  url: string
  token: string
  /** Commands received, for the test to see that the store's traffic went over HTTP. */
  readonly commands: number
  stop(): Promise<void>
}

function encode(value: unknown): unknown {
  if (typeof value === 'string') return value === 'OK' ? value : Buffer.from(value, 'utf8').toString('base64')
  if (Array.isArray(value)) return value.map(encode)
  return value ?? null
}

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startUpstashStandIn(redisUrl = 'redis://127.0.0.1:6379'): Promise<UpstashStandIn> {
  // RESP2, as Upstash answers over REST: flat arrays, no maps.
  const redis = createClient({ url: redisUrl, RESP: 2 })
  await redis.connect()
  const token = 'stand-in-token'
  let commands = 0
  const server = createServer((request, response) => {
    const answer = (status: number, json: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' })
      response.end(JSON.stringify(json))
    }
    void (async () => {
      if (request.headers.authorization !== `Bearer ${token}`) return answer(401, { error: 'Unauthorized' })
      if (request.method !== 'POST' || request.url !== '/') return answer(404, { error: 'only POST / (one command) is stood in for' })
      const command = JSON.parse(await body(request)) as unknown
      if (!Array.isArray(command) || command.length === 0) return answer(400, { error: 'ERR command must be a non-empty JSON array' })
      commands++
      try {
        const result = await redis.sendCommand(command.map(String))
        answer(200, { result: request.headers['upstash-encoding'] === 'base64' ? encode(result) : (result ?? null) })
      } catch (error) {
        answer(400, { error: error instanceof Error ? error.message : String(error) })
      }
    })().catch((error: unknown) => answer(500, { error: String(error) }))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    get commands() {
      return commands
    },
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
      await redis.quit()
    },
  }
}
