/**
 * Which durable store works on which runtime with which client: a receiver on the Redis or PostgreSQL store,
 * through a real client, takes a signed callback twice (200, then 200 without running the handler again).
 * config: { redisUrl, databaseUrl, upstashUrl, upstashToken, checksumToken }. docs/runtimes.md has the results.
 */
import { createReceiver } from 'fpx-collect'
import { postgresStore } from 'fpx-collect/postgres'
import { redisStore } from 'fpx-collect/redis'
import { samplePaymentFields, signCallback } from 'fpx-collect/testing'
import { fpxCallback } from 'fpx-collect/web'

export const CLIENTS = ['ioredis', 'node-redis', 'pg', 'upstash']

/** Opens a client of the kind named: the store it serves and how to close it. */
async function open(name, config) {
  if (name === 'ioredis') {
    const { Redis } = await import('ioredis')
    const client = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await client.connect()
    return { store: (prefix) => redisStore({ client, prefix, inspect: false }), close: () => client.quit() }
  }
  if (name === 'node-redis') {
    const { createClient } = await import('redis')
    const client = createClient({ url: config.redisUrl })
    await client.connect()
    return { store: (prefix) => redisStore({ client, prefix, inspect: false }), close: () => client.quit() }
  }
  if (name === 'pg') {
    const { default: pg } = await import('pg')
    const client = new pg.Pool({ connectionString: config.databaseUrl, max: 2 })
    return { store: (prefix) => postgresStore({ client, table: prefix.replaceAll(':', '') }), close: () => client.end() }
  }
  if (name === 'upstash') {
    // Redis over HTTP (fetch): the store needs only sendCommand([command, ...args]), which @upstash/redis's
    // exec() is; its replies must stay text (automaticDeserialization would parse "1" and JSON values).
    const { Redis } = await import('@upstash/redis')
    const client = new Redis({ url: config.upstashUrl, token: config.upstashToken, automaticDeserialization: false, enableTelemetry: false })
    return { store: (prefix) => redisStore({ client: { sendCommand: (args) => client.exec(args) }, prefix, inspect: false }), close: async () => {} }
  }
  throw new Error(`no client named ${name}`)
}

/** A receiver on the client's store, with a count of its handler's runs. */
function receiverOn(opened, config) {
  const prefix = `fpx_probe_${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}:`
  // Signature only: these payments are made up here, not the emulator's.
  const receiver = createReceiver({ checksumToken: config.checksumToken, signatureOnly: true, store: opened.store(prefix) })
  const shop = { receiver, runs: 0 }
  receiver.on('payment.succeeded', () => {
    shop.runs++
  })
  return shop
}

async function round(shop, config) {
  const delivery = signCallback(samplePaymentFields(), config.checksumToken)
  const post = () =>
    fpxCallback(shop.receiver)(new Request('http://127.0.0.1/fpx/callback', { method: 'POST', headers: { 'content-type': delivery.contentType }, body: delivery.body }))
  const before = shop.runs
  const first = await post()
  const second = await post()
  // The timeline is written after the answer: let it finish before the client closes.
  await shop.receiver.flush()
  const text = async (response) => (response.status === 200 ? '' : ` ${(await response.text()).slice(0, 200)}`)
  return { first: `${first.status}${await text(first)}`, second: `${second.status}${await text(second)}`, runs: shop.runs - before }
}

/** One client, store and receiver for this round only, closed after it. */
export async function probeOnce(name, config) {
  const opened = await open(name, config)
  try {
    return await round(receiverOn(opened, config), config)
  } finally {
    await opened.close()
  }
}

const kept = new Map()
/** One client, store and receiver kept for every round, as a receiver created at module scope holds them. */
export async function probeKept(name, config) {
  if (!kept.has(name)) kept.set(name, receiverOn(await open(name, config), config))
  return round(kept.get(name), config)
}

export function describe(error) {
  return error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : String(error)
}
