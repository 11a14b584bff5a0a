import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The package's version, from its package.json: the nearest one above this module named fpx-collect, found the
 * same way from the sources (src/cli/) and from the build (dist/cli.js), so nothing is copied at build time.
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const found = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown }
      if (found.name === 'fpx-collect' && typeof found.version === 'string') return found.version
    } catch {
      // No package.json here (or an unreadable one): look further up.
    }
    const parent = dirname(dir)
    if (parent === dir) return 'unknown'
    dir = parent
  }
}
