import { spawn } from 'node:child_process'

const TSX = import.meta.resolve('tsx')

/**
 * Runs a soak driver (a script under soak/) as `npm run soak…` would, with `env` added to this process's, and
 * collects everything it prints: its report is what the soak tests check, and their failure message.
 */
export function runDriver(driver: string, env: Record<string, string>, signal?: AbortSignal): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', TSX, driver], { signal, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}
