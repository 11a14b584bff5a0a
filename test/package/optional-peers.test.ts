import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<string, Record<string, unknown>>

/** Frameworks and database drivers are the app's: optional peers, installed here only to test against. */
const OPTIONAL = ['express', 'koa', 'fastify', 'pdfkit', '@opentelemetry/api', 'pg', 'ioredis', 'redis', '@electric-sql/pglite']

describe('package.json', () => {
  it.each(OPTIONAL)('has %s as an optional peer dependency, in devDependencies, not in dependencies', (name) => {
    expect(manifest.peerDependencies?.[name]).toMatch(/^>=\d/)
    expect(manifest.peerDependenciesMeta?.[name]).toEqual({ optional: true })
    expect(manifest.devDependencies?.[name]).toBeTypeOf('string')
    expect(manifest.dependencies?.[name]).toBeUndefined()
  })
})
