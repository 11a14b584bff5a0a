import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { brokenLinks, headingAnchors, markdownFiles, relativeLinks } from './links.js'

const ROOT = path.resolve(import.meta.dirname, '../..')

describe('documentation links', () => {
  const files = markdownFiles(ROOT)

  it('finds the README, the docs and the examples README', () => {
    const names = files.map((file) => path.relative(ROOT, file))
    expect(names).toEqual(expect.arrayContaining(['README.md', 'docs/client.md', 'docs/receiving.md', 'docs/stores.md', 'examples/README.md']))
  })

  it('reads the README\'s links into docs/ (a parser that found none would pass every check below)', () => {
    const targets = relativeLinks(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).map((link) => link.target)
    expect(targets).toEqual(expect.arrayContaining(['docs/client.md', 'docs/stores.md', 'docs/receiving.md#bodies']))
  })

  it.each(files.map((file) => [path.relative(ROOT, file), file]))('%s has no broken relative link', (_name, file) => {
    expect(brokenLinks(file)).toEqual([])
  })

  it('the README fits in 20 KB', () => {
    expect(statSync(path.join(ROOT, 'README.md')).size).toBeLessThan(20_000)
  })
})

describe('the link check itself', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fpx-links-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('makes the anchors GitHub makes', () => {
    const anchors = headingAnchors('# Receiving payment results\n## The URL\'s own query parameters\n## Testing your app: `fpx-collect/testing`\n## Notes\n## Notes\n```\n# not a heading\n```\n')
    expect([...anchors]).toEqual(['receiving-payment-results', 'the-urls-own-query-parameters', 'testing-your-app-fpx-collecttesting', 'notes', 'notes-1'])
  })

  it('reports a missing file and a missing anchor, and ignores code and absolute URLs', () => {
    writeFileSync(path.join(dir, 'other.md'), '# Other\n## Present\n')
    const file = path.join(dir, 'index.md')
    writeFileSync(
      file,
      [
        '# Index',
        '[ok](other.md) [ok too](other.md#present) [self](#index) [web](https://example.com/missing.md)',
        '[gone](missing.md) and [wrong anchor](other.md#absent) and [no such section](#nowhere)',
        '`[in code](missing-in-code.md)`',
        '```md',
        '[in a block](missing-in-block.md)',
        '```',
      ].join('\n'),
    )
    expect(brokenLinks(file)).toEqual([
      `${file}:3 → missing.md: no such file`,
      `${file}:3 → other.md#absent: no heading makes #absent`,
      `${file}:3 → #nowhere: no heading makes #nowhere`,
    ])
  })
})
