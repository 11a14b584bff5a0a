import { fileURLToPath, pathToFileURL } from 'node:url'

/** The `--import` URL that makes a child Node process behave as if `name` were not installed. */
export function withoutPackage(name: string): string {
  return `${pathToFileURL(fileURLToPath(new URL('without-package.mjs', import.meta.url))).href}?package=${encodeURIComponent(name)}`
}
