import { execFileSync } from 'node:child_process'

/** The package tests import the built files, as users do: build them once per test run. */
export default function buildOnce(): void {
  execFileSync(process.execPath, ['node_modules/tsup/dist/cli-default.js', '--silent'], { stdio: 'inherit' })
}
