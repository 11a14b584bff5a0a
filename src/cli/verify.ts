import type { Diagnosis } from '../core/result/diagnosis.js'
import { isReceiverError } from '../core/result/errors.js'
import { verifyDelivery } from '../core/result/verify.js'
import { parseArgs, UsageError } from './args.js'
import { checksumToken, EXIT, helpRequested, type Io, oneLine, readText, TOKEN_FLAG } from './common.js'

export const VERIFY_HELP = `Usage: fpx-collect verify [file | -] [--content-type type] [--explain] [--json]

Checks a captured redirect or callback body the way the receiver does (createReceiver().verify), and tells
whether it is valid, which signed-string rendering matched, which fields it carries and, if not valid, why.
A checksum that does not match gets a diagnosis: the transformation that would make it verify (a Checksum
Token with whitespace or a zero-width character, a field added after signing, ...), or what was tried.

  file                 The raw body as received (default: standard input, also with -).
  --content-type type  application/x-www-form-urlencoded or application/json (default: guessed from the body).
  --explain            With a checksum that does not match: the table of what was tried and what matched.
  --json               Print one JSON object instead of lines (with the diagnosis, when there is one).
  --checksum-token T   The Checksum Token; better: set FPX_CHECKSUM_TOKEN. It is never printed.

Exit codes: 0 valid, 1 not valid, 2 usage error (unknown flag, unreadable file, no token).
`

/** Field names only, read without trusting the message: enough to say what was received when verification fails. */
function fieldNames(body: string, contentType: string): string[] {
  if (contentType.includes('json')) {
    try {
      const value = JSON.parse(body) as unknown
      return typeof value === 'object' && value !== null ? Object.keys(value) : []
    } catch {
      return []
    }
  }
  return [...new Set([...new URLSearchParams(body).keys()].map((name) => name.replace(/\[.*$/s, '')))]
}

export async function verify(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, { ...TOKEN_FLAG, 'content-type': { type: 'string' }, json: { type: 'boolean' }, explain: { type: 'boolean' } })
  if (helpRequested(args, io, VERIFY_HELP)) return EXIT.ok
  if (args.positionals.length > 1) throw new UsageError('give at most one file')
  const token = checksumToken(args, env)
  const source = args.positionals[0] ?? '-'
  const raw = source === '-' ? await io.readStdin() : readText(source)
  // A captured body often ends with the newline of the file or shell that held it; the service never sends one.
  const body = raw.replace(/\r?\n$/, '')
  const contentType = args.string('content-type') ?? (body.trimStart().startsWith('{') ? 'application/json' : 'application/x-www-form-urlencoded')
  const names = fieldNames(body, contentType)
  const print = (report: Record<string, unknown>, lines: string[]) => io.out(args.boolean('json') ? `${JSON.stringify(report, null, 2)}\n` : `${lines.map(oneLine).join('\n')}\n`)
  try {
    const verified = await verifyDelivery({ body, contentType }, { checksumToken: token })
    const payment = verified.payment
    const fields = Object.keys(verified.fields)
    print(
      { valid: true, state: verified.state, rendering: verified.rendering, uid: payment.uid, exchange_number: verified.exchangeNumber, order_number: payment.orderNumber, fields },
      [
        'valid: yes',
        `state: ${verified.state}`,
        `rendering: ${verified.rendering}`,
        `uid: ${payment.uid}`,
        `exchange_number: ${verified.exchangeNumber}`,
        `order_number: ${payment.orderNumber}`,
        `fields (${fields.length}): ${fields.join(', ')}`,
        ...(args.boolean('explain') ? ['explain: the checksum matches the message as received; nothing to diagnose'] : []),
      ],
    )
    return EXIT.ok
  } catch (error) {
    if (!isReceiverError(error)) throw error
    const { diagnosis } = error
    const hint =
      error.code === 'checksum_mismatch' && diagnosis === undefined
        ? 'every rendering was tried; check the Checksum Token belongs to the uid in the message and that the body is byte for byte as received'
        : undefined
    print(
      {
        valid: false,
        code: error.code,
        reason: error.message,
        ...(error.fields === undefined ? {} : { problem_fields: error.fields }),
        ...(hint === undefined ? {} : { hint }),
        ...(diagnosis === undefined ? {} : { diagnosis }),
        fields: names,
      },
      [
        'valid: no',
        `reason: ${error.code}: ${error.message}`,
        ...(hint === undefined ? [] : [`hint: ${hint}`]),
        ...(diagnosis === undefined ? [] : [`diagnosis: ${diagnosis.summary}`]),
        ...(diagnosis !== undefined && args.boolean('explain') ? explanation(diagnosis) : []),
        `fields (${names.length}): ${names.join(', ')}`,
      ],
    )
    return EXIT.negative
  }
}

/** The table of a diagnosis: each family tried, how many candidates, whether it matched, what it was. */
function explanation(diagnosis: Diagnosis): string[] {
  const rows = diagnosis.tried.map((attempt) => [attempt.kind, String(attempt.candidates), attempt.matched ? 'MATCHED' : attempt.candidates === 0 ? 'n/a' : 'no', attempt.description])
  const header = ['tried', 'candidates', 'result', 'what']
  const widths = [0, 1, 2].map((column) => Math.max(...[header, ...rows].map((row) => (row[column] as string).length)))
  const line = (row: string[]) => `  ${row.map((cell, column) => (column === 1 ? cell.padStart(widths[1] as number) : column < 3 ? cell.padEnd(widths[column] as number) : cell)).join('  ')}`.trimEnd()
  return [
    'explain:',
    line(header),
    ...rows.map(line),
    `  ${diagnosis.hmacs} HMAC${diagnosis.hmacs === 1 ? '' : 's'} computed${diagnosis.capped ? ', stopped at the cap before every candidate was tried' : ''}`,
  ]
}
