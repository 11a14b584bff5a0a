import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The folders under src/ name the architecture (core, receiver, stores, client, emulator, cli); these checks keep
 * the tree honest: no import cycle between modules (type-only imports included, since a cycle through types is
 * still a cycle in the design), and the core never reaches outwards into the parts built on it.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const IMPORT = /^(?:import|export)\s+(?:type\s+)?[^'"]*?from\s+['"](\.[^'"]+)['"]/gms

function sourceFiles(): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name)
      if (statSync(full).isDirectory()) walk(full)
      else if (full.endsWith('.ts')) files.push(full)
    }
  }
  for (const top of ['src', 'adapters']) walk(path.join(ROOT, top))
  return files
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles()) {
    const targets = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) =>
      path.resolve(path.dirname(file), (match[1] as string).replace(/\.js$/, '.ts')),
    )
    graph.set(file, targets)
  }
  return graph
}

function findCycles(graph: Map<string, string[]>): string[] {
  const visiting = new Set<string>()
  const done = new Set<string>()
  const stack: string[] = []
  const cycles: string[] = []
  const visit = (file: string) => {
    visiting.add(file)
    stack.push(file)
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue
      if (visiting.has(target)) cycles.push([...stack.slice(stack.indexOf(target)), target].map((f) => path.relative(ROOT, f)).join(' -> '))
      else if (!done.has(target)) visit(target)
    }
    stack.pop()
    visiting.delete(file)
    done.add(file)
  }
  for (const file of graph.keys()) if (!done.has(file)) visit(file)
  return cycles
}

describe('source layout', () => {
  const graph = importGraph()

  it('reads the import graph (a parser that found nothing would pass every check below)', () => {
    const receiver = graph.get(path.join(ROOT, 'src/receiver/receiver.ts'))
    expect(receiver).toContain(path.join(ROOT, 'src/core/verify.ts'))
  })

  it('has no import cycles', () => {
    expect(findCycles(graph)).toEqual([])
  })

  it('finds a cycle when there is one', () => {
    const a = path.join(ROOT, 'a.ts')
    const b = path.join(ROOT, 'b.ts')
    expect(findCycles(new Map([[a, [b]], [b, [a]]]))).toEqual(['a.ts -> b.ts -> a.ts'])
  })

  it('keeps src/core free of imports from the parts built on it', () => {
    const outward = [...graph]
      .filter(([file]) => file.startsWith(path.join(ROOT, 'src/core/')))
      .flatMap(([file, targets]) => targets.filter((t) => !t.startsWith(path.join(ROOT, 'src/core/'))).map((t) => `${path.relative(ROOT, file)} -> ${path.relative(ROOT, t)}`))
    expect(outward).toEqual([])
  })
})
