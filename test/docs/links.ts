import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

/**
 * Relative links in the Markdown files that ship or that a reader of the repository follows. The registry page
 * and GitHub resolve a relative link against the file it is in, so a moved section or a renamed heading breaks
 * links silently; this finds them.
 */

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of withoutCode(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** Fenced blocks and inline code hold examples, not links: blank them, keeping the line count. */
function withoutCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ''))
}

export interface Link {
  line: number
  target: string
}

export function relativeLinks(markdown: string): Link[] {
  const links: Link[] = []
  withoutCode(markdown)
    .split('\n')
    .forEach((text, index) => {
      const prose = text.replace(/`[^`]*`/g, '')
      for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = match[1]!
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:
        links.push({ line: index + 1, target })
      }
    })
  return links
}

/** Every broken relative link of one file: a missing file, or an anchor that no heading of the target makes. */
export function brokenLinks(file: string, read: (file: string) => string = (name) => readFileSync(name, 'utf8')): string[] {
  const broken: string[] = []
  for (const { line, target } of relativeLinks(read(file))) {
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined]
    const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart))
    const where = `${file}:${line} → ${target}`
    if (!existsSync(resolved)) {
      broken.push(`${where}: no such file`)
      continue
    }
    if (anchor === undefined || anchor === '' || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) continue
    if (!headingAnchors(read(resolved)).has(decodeURIComponent(anchor).toLowerCase())) broken.push(`${where}: no heading makes #${anchor}`)
  }
  return broken
}

export function markdownFiles(root: string): string[] {
  const found: string[] = [path.join(root, 'README.md')]
  const walk = (dir: string, deep: boolean) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name)
      if (statSync(full).isDirectory()) {
        if (deep) walk(full, deep)
      } else if (name.endsWith('.md')) found.push(full)
    }
  }
  walk(path.join(root, 'docs'), false)
  walk(path.join(root, 'examples'), true)
  return found
}
