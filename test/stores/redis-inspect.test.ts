import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type RedisDurability, redisStore } from '../../src/stores/redis/store.js'
import { PrivateRedis } from '../../soak/servers.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/*
 * The durability check against real servers: private redis-server processes configured each way (the system
 * Redis is only read, never reconfigured), and one with CONFIG disabled as managed services do.
 */

const available = await serviceAvailable('Redis', REDIS_URL)

function collecting() {
  const warnings: string[] = []
  return { warnings, logger: { warn: (_details: object, message: string) => void warnings.push(message), debug: () => {} } }
}

async function inspectWith(url: string, library: 'ioredis' | 'node-redis'): Promise<{ found: RedisDurability; warnings: string[] }> {
  const { warnings, logger } = collecting()
  if (library === 'ioredis') {
    const client = new Redis(url, { lazyConnect: true })
    await client.connect()
    try {
      const store = redisStore({ client, logger, prefix: 'fpx-test-inspect:' })
      // The check runs by itself on the first claim and logs; inspect() returns what it found.
      await store.claim({ exchangeNumber: `EX-${Math.random()}`, state: 'succeeded', owner: 'o', leaseMs: 1000 })
      const found = await store.inspect()
      await new Promise((resolve) => setTimeout(resolve, 20))
      await client.del(...(await client.keys('fpx-test-inspect:*')))
      return { found, warnings }
    } finally {
      await client.quit()
    }
  }
  const client = createClient({ url })
  client.on('error', () => {})
  await client.connect()
  try {
    const store = redisStore({ client, logger, inspect: false })
    const found = await store.inspect()
    return { found, warnings }
  } finally {
    await client.close()
  }
}

describe.skipIf(!available)('Redis durability check', () => {
  const servers: PrivateRedis[] = []
  let always: PrivateRedis
  let everysec: PrivateRedis
  let managed: PrivateRedis
  beforeAll(async () => {
    ;[always, everysec, managed] = await Promise.all([
      PrivateRedis.start('always', ['--maxmemory-policy', 'noeviction']),
      PrivateRedis.start('everysec', ['--maxmemory-policy', 'volatile-lru']),
      // A managed service: CONFIG renamed away, nothing on disk.
      PrivateRedis.start('none', ['--rename-command', 'CONFIG', '""', '--maxmemory-policy', 'allkeys-lru']),
    ])
    servers.push(always, everysec, managed)
  }, 30_000)
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()))
  })

  it('is silent for AOF with appendfsync always and noeviction: a restart forgets nothing', async () => {
    for (const library of ['ioredis', 'node-redis'] as const) {
      const { found, warnings } = await inspectWith(always.url, library)
      expect(found).toMatchObject({ source: 'config', appendonly: true, appendfsync: 'always', maxmemoryPolicy: 'noeviction', restartForgets: 'nothing', evicts: false })
      expect(warnings).toEqual([])
    }
  })

  it('warns that everysec loses the last second on a crash, and that an eviction policy forgets states', async () => {
    const { found, warnings } = await inspectWith(everysec.url, 'ioredis')
    expect(found).toMatchObject({ restartForgets: 'last-second', evicts: true, maxmemoryPolicy: 'volatile-lru' })
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/appendfsync is everysec: a machine crash \(power loss, kernel panic\) loses up to the last second/)
    expect(warnings[1]).toMatch(/^fpx-collect: IMPORTANT! Redis maxmemory-policy is volatile-lru\. It should be "noeviction"/)
  })

  it('falls back to INFO when CONFIG is disabled, and still sees no AOF and the eviction policy', async () => {
    const { found, warnings } = await inspectWith(managed.url, 'node-redis')
    expect(found).toMatchObject({ source: 'info', appendonly: false, appendfsync: undefined, maxmemoryPolicy: 'allkeys-lru', evicts: true })
    expect(found.warnings.join('\n')).toMatch(/IMPORTANT! Redis keeps no append-only file/)
    expect(warnings).toEqual([]) // inspect: false: asked, but nothing logged by itself
  })

  it('reads the system Redis without changing it', async () => {
    const { found } = await inspectWith(REDIS_URL, 'ioredis')
    expect(found.source).toBe('config')
    expect(typeof found.appendonly).toBe('boolean')
    if (found.appendonly === false) expect(found.warnings.join('\n')).toMatch(/IMPORTANT!/)
  })

  it('logger false silences the check, as it does the receiver; a logger without warn is refused when the store is made', async () => {
    // The private server that keeps only a second's writes and evicts: a check that reported would warn.
    const client = new Redis(everysec.url)
    const prefix = `fpx-test-inspect-silent:${Math.random()}:`
    const rejections: unknown[] = []
    const onRejection = (reason: unknown) => void rejections.push(reason)
    process.on('unhandledRejection', onRejection)
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const store = redisStore({ client, logger: false, prefix })
      await store.claim({ exchangeNumber: 'EX-SILENT', state: 'succeeded', owner: 'o', leaseMs: 1000 })
      expect((await store.inspect()).warnings.length).toBeGreaterThan(0)
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(rejections).toEqual([])
      expect(warn).not.toHaveBeenCalled()
      for (const logger of ['console', console.warn, { debug: () => {} }])
        expect(() => redisStore({ client, logger: logger as never })).toThrow(/logger must be an object with a warn method/)
      expect(() => redisStore({ client, logger: null as never, inspect: false })).not.toThrow()
    } finally {
      process.off('unhandledRejection', onRejection)
      warn.mockRestore()
      const keys = await client.keys(`${prefix}*`)
      if (keys.length > 0) await client.del(...keys)
      await client.quit()
    }
  })
})
