import { sha1Hex } from '../../core/crypto.js'

/*
 * The store speaks raw commands so that one implementation serves both client libraries. The shapes below are
 * structural on purpose: importing the libraries' own types would make this module's declarations depend on
 * packages a user of the other client (or of no Redis at all) does not have installed.
 */

/** An ioredis `Redis` instance: anything with ioredis's `call(command, ...args)`. */
export interface IoredisLikeClient {
  call(command: string, ...args: string[]): Promise<unknown>
}

/** A node-redis v4+ client from `createClient()`: anything with `sendCommand([command, ...args])`. */
export interface NodeRedisLikeClient {
  sendCommand(args: string[]): Promise<unknown>
}

export type RedisClientLike = IoredisLikeClient | NodeRedisLikeClient

export type RawCommand = (args: string[]) => Promise<unknown>

/**
 * A function sending one raw command through whichever client was given. ioredis is tested first because its
 * clients also have a `sendCommand`, one that takes an internal Command object instead of an array.
 */
export function rawCommand(client: RedisClientLike): RawCommand {
  const candidate = client as Partial<IoredisLikeClient & NodeRedisLikeClient> | null | undefined
  if (typeof candidate?.call === 'function') {
    const call = candidate.call.bind(candidate)
    return ([command = '', ...args]) => call(command, ...args)
  }
  if (typeof candidate?.sendCommand === 'function') return candidate.sendCommand.bind(candidate)
  throw new TypeError('client must be an ioredis client (with call()) or a node-redis v4+ client (with sendCommand())')
}

export type Script = (keys: readonly string[], args: readonly string[]) => Promise<unknown>

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/**
 * Runs a Lua script by its SHA1, sending the source only when the server does not know it yet (first use, after
 * a restart, a failover or SCRIPT FLUSH); EVAL caches it for the next EVALSHA.
 */
export function luaScript(send: RawCommand, source: string): Script {
  // Web Crypto rather than node:crypto, so that the store runs wherever the receiver does (Workers included).
  let sha: Promise<string> | undefined
  return async (keys, args) => {
    sha ??= sha1Hex(source)
    const tail = [String(keys.length), ...keys, ...args]
    try {
      return await send(['EVALSHA', await sha, ...tail])
    } catch (error) {
      if (!isNoScript(error)) throw error
      return send(['EVAL', source, ...tail])
    }
  }
}

/** A bulk string reply as text: clients configured to map replies to Buffers still work. */
export function replyText(reply: unknown): string | null {
  if (reply === null || reply === undefined) return null
  return typeof reply === 'string' ? reply : String(reply)
}

/** An array reply as texts (none for anything else). */
export const replyTexts = (reply: unknown): (string | null)[] => (Array.isArray(reply) ? reply.map(replyText) : [])

/** A text's length in bytes, as Lua's # counts it: key names carry it in front of a uid (payment-book.ts). */
export const byteLength = (text: string): number => new TextEncoder().encode(text).length
