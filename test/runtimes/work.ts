import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve, sep } from 'node:path'

/**
 * The folder the apps run from, laid out as a user's project would be: the package as npm packs it (the built
 * dist/, the `files` list) unpacked into node_modules/fpx-collect, and the apps beside it. It sits inside the
 * repository so that what the packed package depends on (zod, raw-body) and the runtimes' own packages (hono,
 * wrangler in test/runtimes/node_modules; next in the root) resolve as they would in a user's node_modules.
 */

export const ROOT = resolve('.')
export const RUNTIMES = join(ROOT, 'test', 'runtimes')
export const RUNTIME_MODULES = join(RUNTIMES, 'node_modules')
export const WORK = join(RUNTIMES, '.work')
export const APPS = join(WORK, 'apps')

/**
 * The folder Turbopack may build from: the repository, or, when its node_modules is a link to another checkout's
 * (a git worktree), the folder holding both, since Turbopack resolves no file outside its root.
 */
export function buildRoot(): string {
  const next = realpathSync(join(ROOT, 'node_modules', 'next'))
  const shared: string[] = []
  const [ours, theirs] = [ROOT.split(sep), next.split(sep)]
  for (let i = 0; i < ours.length && ours[i] === theirs[i]; i++) shared.push(ours[i] as string)
  return shared.join(sep) || sep
}

/** Builds and packs the package and lays out WORK; returns the tarball's name. */
export function prepareWork(): string {
  rmSync(WORK, { recursive: true, force: true })
  mkdirSync(WORK, { recursive: true })
  // tsup as `npm run build` runs it, with this process's Node.
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'tsup', 'dist', 'cli-default.js'), '--silent'], { cwd: ROOT, stdio: 'inherit' })
  execFileSync('npm', ['pack', '--silent', '--pack-destination', WORK], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  const tarball = readdirSync(WORK).find((name) => name.endsWith('.tgz'))
  if (tarball === undefined) throw new Error(`npm pack left no tarball in ${WORK}`)
  const installed = join(WORK, 'node_modules', 'fpx-collect')
  mkdirSync(installed, { recursive: true })
  execFileSync('tar', ['-xzf', join(WORK, tarball), '-C', installed, '--strip-components=1'])
  // An ES-module project; Deno reads its node_modules because of this file.
  writeFileSync(join(WORK, 'package.json'), `${JSON.stringify({ name: 'fpx-collect-runtime-apps', private: true, type: 'module' }, null, 2)}\n`)
  // The apps' own (empty) TypeScript configuration: without it Bun and wrangler's esbuild apply the repository's
  // tsconfig paths, which map 'fpx-collect' to the sources instead of the packed package.
  writeFileSync(join(WORK, 'tsconfig.json'), '{ "compilerOptions": {} }\n')
  cpSync(join(RUNTIMES, 'apps'), APPS, { recursive: true })
  return tarball
}
