/**
 * The benchmarks measure the built package in dist/, as merchants run it, never the sources through tsx (whose
 * transform wraps every function in a name helper and distorts profiles). The harness itself may run under tsx:
 * tsx leaves plain .js files alone.
 *
 * Types come from the sources (erased at run time), so `tsc --noEmit` works before any build.
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function newestSource(directory: string): number {
  let newest = 0
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs)
  }
  return newest
}

let checked = false

/** Refuses a missing or stale build: figures from code other than the sources' would mislead. */
export function assertBuilt(): void {
  if (checked) return
  let built: number
  try {
    built = statSync(join(ROOT, 'dist', 'index.js')).mtimeMs
  } catch {
    throw new Error('dist/ is missing: run `npm run build` first (the benchmarks measure the built package)')
  }
  const sources = Math.max(newestSource(join(ROOT, 'src')), newestSource(join(ROOT, 'adapters')))
  if (sources > built && process.env.BENCH_ALLOW_STALE !== '1')
    throw new Error('dist/ is older than src/ or adapters/: run `npm run build` first (or set BENCH_ALLOW_STALE=1)')
  checked = true
}

/** A module of the built package by its dist/ file name without extension: `index`, `fastify`, `redis`. */
export async function fromDist<T>(entry: string): Promise<T> {
  assertBuilt()
  return (await import(pathToFileURL(join(ROOT, 'dist', `${entry}.js`)).href)) as T
}

export type Core = typeof import('../src/index.js')
export type Testing = typeof import('../src/testing.js')
