/**
 * Loaded with `node --import` to run the emulator on Fastify 4 (installed as the devDependency alias
 * `fastify4`): a module resolution hook answers every import of `fastify` with it. The peer range is >=4.
 */
import { register } from 'node:module'

const hook = `export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'fastify') return nextResolve('fastify4', context)
  return nextResolve(specifier, context)
}`

register(`data:text/javascript,${encodeURIComponent(hook)}`)
