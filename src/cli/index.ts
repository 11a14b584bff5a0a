/**
 * The `fpx-collect` command: emulator, sign, verify, trigger, inbox, payments, timeline, console, sweep, rehearse.
 * Built to dist/cli.js (the package's bin); during development: node --import tsx src/cli/index.ts <command> ...
 */
import { UsageError } from './args.js'
import { EXIT, type Io } from './common.js'
import { consoleCommand } from './console.js'
import { emulator } from './emulator.js'
import { inbox } from './inbox.js'
import { payments } from './payments.js'
import { rehearse } from './rehearse.js'
import { sign } from './sign.js'
import { sweep } from './sweep.js'
import { timeline } from './timeline.js'
import { trigger } from './trigger.js'
import { verify } from './verify.js'
import { packageVersion } from './version.js'

const HELP = `Usage: fpx-collect <command> [options]
       fpx-collect --version

Commands:
  emulator   Start the local emulator of the payment service
  sign       Compute a checksum, or a signed body, from fields
  verify     Check a captured redirect/callback body: valid or not, and why
  trigger    Send a signed payment result of a chosen state to a URL
  inbox      List, show and retry inbox-mode entries in PostgreSQL or Redis
  payments   List the payments of the payment book by status and time, show one with its timeline
  timeline   What happened to one payment, by order_number or exchange_number
  console    Serve the operator's console for a PostgreSQL or Redis store on 127.0.0.1 (a one-time link)
  sweep      Look up open payments through the status API once, with your receiver's handlers
  rehearse   Rehearse a sale: payments at a steady rate, their results sent to your app, and what gave way

Run fpx-collect <command> --help for its options.
Secrets come from --checksum-token or the FPX_CHECKSUM_TOKEN environment variable and are never printed.
Exit codes: 0 success, 1 negative answer (invalid message, non-2xx reply), 2 usage error, 3 failure (network, port).
`

const io: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  async readStdin() {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin as AsyncIterable<Buffer>) chunks.push(chunk)
    return Buffer.concat(chunks).toString('utf8')
  },
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'emulator':
        return await emulator(rest, io)
      case 'sign':
        return sign(rest, io, process.env)
      case 'verify':
        return await verify(rest, io, process.env)
      case 'trigger':
        return await trigger(rest, io, process.env)
      case 'inbox':
        return await inbox(rest, io, process.env)
      case 'payments':
        return await payments(rest, io, process.env)
      case 'console':
        return await consoleCommand(rest, io, process.env)
      case 'timeline':
        return await timeline(rest, io, process.env)
      case 'sweep':
        return await sweep(rest, io)
      case 'rehearse':
        return await rehearse(rest, io, process.env)
      case '--version':
      case '-v':
      case 'version':
        io.out(`${packageVersion()}\n`)
        return EXIT.ok
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        io.out(HELP)
        return command === undefined ? EXIT.usage : EXIT.ok
      default:
        throw new UsageError(`unknown command "${command}"`)
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    io.err(`fpx-collect${command === undefined ? '' : ` ${command}`}: ${error.message}\nRun fpx-collect ${command !== undefined && ['emulator', 'sign', 'verify', 'trigger', 'inbox', 'payments', 'timeline', 'console', 'sweep', 'rehearse'].includes(command) ? `${command} ` : ''}--help for usage.\n`)
    return EXIT.usage
  }
}

// No top-level await, so the bundle works whether tsup emits it as ESM or CommonJS.
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`fpx-collect: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = EXIT.failure
  },
)
