import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * What `npm pack` puts in the tarball, from a copy of the repository as a clean clone has it (tracked and new,
 * unignored files) with dist/ built there: a build here would race exports.test.ts, whose build cleans dist/
 * while it imports from it.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const copy = mkdtempSync(path.join(tmpdir(), 'fpx-pack-'))
let packed: string[] = []

beforeAll(() => {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
  for (const file of files.split('\0').filter((name) => name !== '')) {
    mkdirSync(path.dirname(path.join(copy, file)), { recursive: true })
    // A file deleted in the work tree but still in the index is not in a clean clone's next commit either.
    try {
      cpSync(path.join(ROOT, file), path.join(copy, file))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir')
  execFileSync(process.execPath, ['node_modules/tsup/dist/cli-default.js', '--silent'], { cwd: copy, stdio: 'inherit' })
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const report = JSON.parse(execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: copy, encoding: 'utf8' })) as [{ files: { path: string }[] }]
  packed = report[0].files.map((file) => file.path).sort()
}, 300_000)

afterAll(() => rmSync(copy, { recursive: true, force: true }))

const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  files: string[]
  exports: Record<string, unknown>
  main: string
  module: string
  types: string
  bin: Record<string, string>
  repository: { url: string }
  homepage: string
  bugs: { url: string }
}

/** Every file path named anywhere in package.json's exports, main, module, types and bin. */
function entryPoints(): string[] {
  const found = new Set<string>()
  const walk = (value: unknown) => {
    if (typeof value === 'string') found.add(value.replace(/^\.\//, ''))
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk)
  }
  walk(manifest.exports)
  walk([manifest.main, manifest.module, manifest.types, manifest.bin])
  return [...found]
}

describe('the packed tarball', () => {
  it('holds every entry point package.json names', () => {
    const entries = entryPoints()
    expect(entries).toContain('dist/cli.js')
    expect(entries.filter((entry) => !packed.includes(entry))).toEqual([])
  })

  it('holds the README, the SQL schema and every document, so links from the README resolve in the package', () => {
    const docs = readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md'))
    expect(docs.length).toBeGreaterThan(5)
    expect(packed).toEqual(expect.arrayContaining(['README.md', 'package.json', 'sql/fpx-collect.sql', ...docs.map((name) => `docs/${name}`)]))
  })

  it('holds nothing else: no sources, tests, examples, benchmarks or stray files', () => {
    const allowed = [
      /^dist\/[\w-]+\.(js|cjs|d\.ts|d\.cts|js\.map|cjs\.map)$/,
      /^docs\/[\w-]+\.md$/,
      /^sql\/[\w-]+\.sql$/,
      /^(README\.md|package\.json|LICENSE)$/,
    ]
    expect(packed.filter((file) => !allowed.some((pattern) => pattern.test(file)))).toEqual([])
    expect(manifest.files.sort()).toEqual(['README.md', 'dist', 'docs', 'sql'])
  })

  it('says where the repository is, so the registry page links somewhere', () => {
    expect(manifest.repository.url).toMatch(/^git\+https:\/\/github\.com\/[\w-]+\/[\w-]+\.git$/)
    expect(manifest.homepage).toMatch(/^https:\/\/github\.com\/[\w-]+\/[\w-]+#readme$/)
    expect(manifest.bugs.url).toMatch(/^https:\/\/github\.com\/[\w-]+\/[\w-]+\/issues$/)
  })
})
