/**
 * Loaded with `node --import` to run a receiver as if the optional peer dependency @opentelemetry/api were not
 * installed: a module resolution hook answers every import of it as Node does for a missing package.
 */
import { register } from 'node:module'

const hook = `export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/api/')) {
    const error = new Error(\`Cannot find package '\${specifier}' imported from \${context.parentURL}\`)
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return nextResolve(specifier, context)
}`

register(`data:text/javascript,${encodeURIComponent(hook)}`)
