import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from './run.js'

/**
 * A JSON file the CLI reads that is not valid JSON: the error names the file and the place, never the text
 * around the mistake (V8's message quotes it, and a config or state file holds tokens).
 */
const dir = mkdtempSync(join(tmpdir(), 'fpx-json-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const SECRET = 'Qz7pLm3XwR9tKv2NhY5c'
const UID = '11111111-2222-4333-8444-555555555555'

/** Fails if any 6 characters in a row of SECRET were printed. */
function expectNoPartOfSecret(output: string): void {
  for (let i = 0; i + 6 <= SECRET.length; i++) expect(output, `printed ${SECRET.slice(i, i + 6)}`).not.toContain(SECRET.slice(i, i + 6))
}

function write(name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

describe('a JSON file that is not valid JSON', () => {
  it('--config: a missing comma after a token is reported by line and column, without the token', async () => {
    // Line 4 is `      "checksumToken": ...`, right after the Auth Token's line lost its comma.
    const config = write(
      'comma.json',
      `{\n  "merchants": [{ "name": "Kedai Ujian", "credentials": [{\n      "uid": "${UID}", "authToken": "${SECRET}"\n      "checksumToken": "${SECRET}"\n  }] }]\n}\n`,
    )
    const result = await runCli(['emulator', '--port', '0', '--config', config])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`${config} is not valid JSON (line 4, column 7)`)
    expectNoPartOfSecret(result.stdout + result.stderr)
  })

  it('--config: an unquoted token (which V8 quotes back) is refused without any of it', async () => {
    const config = write('unquoted.json', `{ "merchants": [{ "name": "Kedai Ujian", "credentials": [{ "uid": "${UID}", "authToken": ${SECRET} }] }] }`)
    const result = await runCli(['emulator', '--port', '0', '--config', config])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`${config} is not valid JSON`)
    expectNoPartOfSecret(result.stdout + result.stderr)
  })

  it('--state: a broken state file is refused (exit 2) without any of its credentials', async () => {
    const state = write('state.json', `{ "version": 1, "setup": { "merchants": [{ "credentials": [{ "authToken": ${SECRET} }] }] } }`)
    const result = await runCli(['emulator', '--port', '0', '--state', state])
    expectNoPartOfSecret(result.stdout + result.stderr)
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`the emulator state file ${state} is not valid JSON`)
  })

  it('--fields: the same for sign, on the first line', async () => {
    const fields = write('fields.json', `{ "order_number": "ORD-1", "note": "${SECRET}" "x": 1 }`)
    const result = await runCli(['sign', '--fields', fields, '--checksum-token', 'ab'.repeat(32)])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`${fields} is not valid JSON (line 1, column ${`{ "order_number": "ORD-1", "note": "${SECRET}" `.length + 1})`)
    expectNoPartOfSecret(result.stdout + result.stderr)
  })
})
