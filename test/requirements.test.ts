import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, serverBinary } from '../soak/servers.js'
import { skipSummary, skipsRequested } from './requirements.js'
import { serviceAvailable } from './stores/services.js'


describe('what the suite needs: a missing service fails, FPX_SKIP skips', () => {
  it('fails when PostgreSQL or Redis does not answer, naming it, how to start it and how to skip it', async () => {
    // A port the system just handed out and took back: nothing listens on it.
    const port = await freePort()
    await expect(serviceAvailable('PostgreSQL', `postgres://postgres:secret@127.0.0.1:${port}/test`, {})).rejects.toThrow(
      new RegExp(`^PostgreSQL is not reachable at postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${port}/test \\(ECONNREFUSED\\)\\. .*pg_ctlcluster.*FPX_SKIP=postgres`),
    )
    await expect(serviceAvailable('Redis', `redis://127.0.0.1:${port}`, {})).rejects.toThrow(/^Redis is not reachable .*redis-server --daemonize yes.*FPX_SKIP=redis/)
  })

  it('skips what FPX_SKIP names without asking the service, and only that', async () => {
    // A port the system just handed out and took back: nothing listens on it.
    const port = await freePort()
    expect(await serviceAvailable('PostgreSQL', `postgres://127.0.0.1:${port}/test`, { FPX_SKIP: 'browser, postgres' })).toBe(false)
    await expect(serviceAvailable('Redis', `redis://127.0.0.1:${port}`, { FPX_SKIP: 'postgres' })).rejects.toThrow(/Redis is not reachable/)
  })

  it('refuses an FPX_SKIP naming something it does not know, and sums up what a run skipped', () => {
    expect(() => skipsRequested({ FPX_SKIP: 'redis,pg' })).toThrow(/FPX_SKIP names "pg", which the suite does not know; it knows redis, postgres, browser, restart/)
    expect([...skipsRequested({ FPX_SKIP: ' redis , browser,' })]).toEqual(['redis', 'browser'])
    expect(skipSummary({})).toBeUndefined()
    expect(skipSummary({ FPX_SKIP: '' })).toBeUndefined()
    expect(skipSummary({ FPX_SKIP: 'redis,browser' })).toBe(
      'FPX_SKIP=redis,browser: this run skipped every test that needs Redis; Chromium. It does not show that those pass.',
    )
  })
})

describe("the soak's server programs", () => {
  const root = mkdtempSync(join(tmpdir(), 'fpx-binaries-'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  const program = (path: string) => {
    mkdirSync(join(path, '..'), { recursive: true })
    writeFileSync(path, '#!/bin/sh\n')
    chmodSync(path, 0o755)
    return path
  }

  it("finds pg_ctl and initdb under Debian's newest /usr/lib/postgresql/<version>/bin when PATH lacks them", () => {
    const debian = join(root, 'debian')
    program(join(debian, '9.6', 'bin', 'pg_ctl'))
    const newest = program(join(debian, '15', 'bin', 'pg_ctl'))
    program(join(debian, '15', 'bin', 'initdb'))
    mkdirSync(join(debian, '16'), { recursive: true })
    expect(serverBinary('pg_ctl', { PATH: join(root, 'nowhere') }, debian)).toBe(newest)
    expect(serverBinary('initdb', { PATH: '' }, debian)).toBe(join(debian, '15', 'bin', 'initdb'))
    // PATH first: a build the user chose wins over Debian's.
    const chosen = program(join(root, 'bin', 'pg_ctl'))
    expect(serverBinary('pg_ctl', { PATH: `${join(root, 'nowhere')}:${join(root, 'bin')}` }, debian)).toBe(chosen)
    // redis-server only on PATH; nothing anywhere is undefined.
    expect(serverBinary('redis-server', { PATH: join(root, 'bin') }, debian)).toBeUndefined()
    expect(serverBinary('initdb', { PATH: '' }, join(root, 'no-debian'))).toBeUndefined()
  })
})
