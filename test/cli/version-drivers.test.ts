/*
 * `fpx-collect --version`, and the inbox command without the database driver it needs: the package is named
 * with the command that installs it (as the emulator does for fastify), not reported as an unreachable store.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { withoutPackage } from '../without-package.js'
import { runCli } from './run.js'

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

describe('fpx-collect --version', { timeout: 60_000 }, () => {
  it('prints the package version, as --version, -v and version', async () => {
    const results = await Promise.all([runCli(['--version']), runCli(['-v']), runCli(['version'])])
    for (const result of results) expect(result).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' })
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('is listed in the help', async () => {
    expect((await runCli(['--help'])).stdout).toContain('fpx-collect --version')
  })
})

describe('fpx-collect inbox without its database driver', { timeout: 60_000 }, () => {
  it.each([
    ['pg', 'postgres://fpx:secret-pass@127.0.0.1:5432/test'],
    ['ioredis', 'redis://:secret-pass@127.0.0.1:6379'],
  ])('names %s as missing, with its install command, and exits 3', async (driver, url) => {
    const result = await runCli(['inbox', 'list', '--url', url], { imports: [withoutPackage(driver)] })
    expect(result.code, result.stderr).toBe(3)
    expect(result.stderr).toContain(`needs the optional package ${driver}, which is not installed: npm install ${driver}`)
    expect(result.stderr).toContain(`npx -p fpx-collect -p ${driver} fpx-collect inbox`)
    expect(result.stderr).not.toContain('cannot reach')
    expect(result.stderr).not.toContain('secret-pass')
  })
})
