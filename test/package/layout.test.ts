import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The folders under src/ name the architecture (README, Architecture); these checks keep the tree honest: no
 * import cycle between modules (type-only imports included, since a cycle through types is still a cycle in the
 * design), and every import between folders points down the layers below. Folders on one layer do not import each
 * other (the three stores, result verification and request signing, the client and the emulator).
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

/** Layers, lowest first. A folder may import its own files and folders on lower layers only. */
const LAYERS: readonly (readonly string[])[] = [
  ['src/core'],
  ['src/core/result', 'src/core/request'],
  ['src/contract'],
  ['src/stores/memory', 'src/stores/redis', 'src/stores/postgres', 'src/client'],
  ['src/inbox'],
  ['src/receiver'],
  ['src/http'],
  ['src/emulator', 'src/console'],
  ['src/cli'],
  ['src', 'adapters'],
]

function layerOf(folder: string): number {
  const layer = LAYERS.findIndex((folders) => folders.includes(folder))
  if (layer === -1) throw new Error(`${folder} is on no layer: add it to LAYERS`)
  return layer
}

/** Imports between folders that do not point down, as `from-folder -> to-folder (file)`. */
function upwardImports(graph: Map<string, string[]>): string[] {
  const found: string[] = []
  for (const [file, targets] of graph) {
    const from = path.relative(ROOT, path.dirname(file))
    for (const target of targets) {
      const to = path.relative(ROOT, path.dirname(target))
      if (to === from) continue
      if (layerOf(to) >= layerOf(from)) found.push(`${from} -> ${to} (${path.relative(ROOT, file)})`)
    }
  }
  return found
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
    expect(receiver).toContain(path.join(ROOT, 'src/core/result/verify.ts'))
  })

  it('has no import cycles', () => {
    expect(findCycles(graph)).toEqual([])
  })

  it('finds a cycle when there is one', () => {
    const a = path.join(ROOT, 'a.ts')
    const b = path.join(ROOT, 'b.ts')
    expect(findCycles(new Map([[a, [b]], [b, [a]]]))).toEqual(['a.ts -> b.ts -> a.ts'])
  })

  it('puts every source folder on a layer', () => {
    const folders = new Set([...graph.keys()].map((file) => path.relative(ROOT, path.dirname(file))))
    expect([...folders].filter((folder) => !LAYERS.some((layer) => layer.includes(folder)))).toEqual([])
  })

  it('has every import between folders point down the layers', () => {
    expect(upwardImports(graph)).toEqual([])
  })

  it('finds an import that points up or sideways', () => {
    const store = path.join(ROOT, 'src/stores/redis/store.ts')
    const receiver = path.join(ROOT, 'src/receiver/receiver.ts')
    const memory = path.join(ROOT, 'src/stores/memory/store.ts')
    expect(upwardImports(new Map([[store, [receiver, memory]]]))).toEqual([
      'src/stores/redis -> src/receiver (src/stores/redis/store.ts)',
      'src/stores/redis -> src/stores/memory (src/stores/redis/store.ts)',
    ])
  })

  it('keeps src/core free of imports from the parts built on it', () => {
    const outward = [...graph]
      .filter(([file]) => file.startsWith(path.join(ROOT, 'src/core/')))
      .flatMap(([file, targets]) => targets.filter((t) => !t.startsWith(path.join(ROOT, 'src/core/'))).map((t) => `${path.relative(ROOT, file)} -> ${path.relative(ROOT, t)}`))
    expect(outward).toEqual([])
  })
})
