import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The CLI as users run it: a separate Node process (through tsx, as `node --import tsx src/cli/index.ts`). */
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const TOKEN = 'ab'.repeat(32)

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  // The caller's FPX_CHECKSUM_TOKEN must never leak into a test that checks what happens without one.
  const { FPX_CHECKSUM_TOKEN: _dropped, ...rest } = process.env
  return { ...rest, NO_COLOR: '1', ...env }
}

/** `imports`: further --import hooks, such as withoutPackage('pg') (test/without-package.ts). */
export function startCli(args: readonly string[], env: Record<string, string> = {}, imports: readonly string[] = []): ChildProcessWithoutNullStreams {
  const hooks = imports.map((hook) => `--import=${hook}`)
  return spawn(process.execPath, ['--import', 'tsx', ...hooks, 'src/cli/index.ts', ...args], { cwd: ROOT, env: cleanEnv(env) })
}

export function runCli(args: readonly string[], options: { env?: Record<string, string>; input?: string; imports?: readonly string[] } = {}): Promise<CliResult> {
  const child = startCli(args, options.env, options.imports)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  child.stdin.end(options.input ?? '')
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

export interface EmulatorCli {
  /** Everything printed up to "Press Ctrl+C to stop.". */
  readonly banner: string
  /** The service's base URL from the banner. */
  readonly baseUrl: string
  stop(): Promise<{ code: number | null; output: string }>
}

/** Starts `fpx-collect emulator` on a free port, waits for its banner, and returns it with a way to stop it. */
export async function startEmulatorCli(args: readonly string[], env: Record<string, string> = {}): Promise<EmulatorCli> {
  const child = startCli(['emulator', '--port', '0', ...args], env)
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve))
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => {
      if (output.includes('Press Ctrl+C to stop.')) resolve()
    })
    void exited.then((code) => reject(new Error(`emulator exited with ${code}: ${output}`)))
  })
  return {
    banner: output,
    baseUrl: /base URL\s+(\S+)/.exec(output)?.[1] ?? '',
    async stop() {
      child.kill('SIGTERM')
      return { code: await exited, output }
    },
  }
}
