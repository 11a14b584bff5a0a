/**
 * Loaded with `node --import <this file's URL>?package=<name>` to run code as if an optional peer dependency were
 * not installed: a module resolution hook answers every import of that package as Node does for a missing one.
 */
import { register } from 'node:module'
import { URL } from 'node:url'

const name = new URL(import.meta.url).searchParams.get('package')
if (!name) throw new Error('without-package.mjs needs ?package=<name> in its URL')

const hook = `const name = ${JSON.stringify(name)}
export async function resolve(specifier, context, nextResolve) {
  if (specifier === name || specifier.startsWith(name + '/')) {
    const error = new Error(\`Cannot find package '\${specifier}' imported from \${context.parentURL}\`)
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return nextResolve(specifier, context)
}`

register(`data:text/javascript,${encodeURIComponent(hook)}`)
