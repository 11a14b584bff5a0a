import { spawn } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The `--import` URL that makes a child Node process behave as if `name` were not installed. */
export function withoutPackage(name: string): string {
  return `${pathToFileURL(fileURLToPath(new URL('without-package.mjs', import.meta.url))).href}?package=${encodeURIComponent(name)}`
}

/**
 * Runs an ES module script from the repository root with tsx, extra --import hooks and Node flags (`--expose-gc`);
 * its output and exit code.
 */
export async function runScript(script: string, hooks: readonly string[], flags: readonly string[] = []): Promise<{ code: unknown; output: string }> {
  const args = [...flags, '--import', 'tsx', ...hooks.map((hook) => `--import=${hook}`), '--input-type=module', '-e', script]
  const child = spawn(process.execPath, args, { cwd: ROOT })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  // A child that cannot be spawned fails the test at once rather than at its timeout.
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  return { code, output }
}
