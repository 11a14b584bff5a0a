import { DEMO_MERCHANT, DEMO_PARTNER, type EmulatorConfig } from '../emulator/config.js'
import { startEmulator } from '../emulator/server.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io, readJsonFile } from './common.js'

export const EMULATOR_HELP = `Usage: fpx-collect emulator [--port 4010] [--host 127.0.0.1] [--config file.json] [--state file.json] [--strict]
                            [--show-credentials]

Starts the local emulator of the payment service and prints its base URL, its control API's address and the
credentials of its merchants and partners (by default the demo ones: public, made-up values). Point your app's
base URL at it. Stop it with Ctrl+C.

  --port N             Port to listen on (default 4010; 0 picks a free one).
  --host H             Address to listen on (default 127.0.0.1). The control API has no authentication:
                       keep it on loopback.
  --config file.json   Merchants, partners, banks, strict mode and callback delivery (attempts, backoff,
                       transport): a JSON object whose every key is listed in docs/emulator.md, "The
                       configuration file". Credentials left out are generated.
  --state file.json    Load the state from this file when it exists, and save it after every change and on
                       stop: merchants, partners and banks (credentials included: keep it local), payments and
                       payment sessions. While the file exists its merchants win over --config's.
  --strict             Refuse what the real service is seen to accept but the spec's strict reading does not,
                       instead of accepting it with a warning. Also "strict": true in the --config file.
  --show-credentials   Also print the Auth Tokens and Checksum Tokens of a --config or --state file's credentials.
                       Without it they are shown as "(set; see config)". The built-in demo ones are always printed.

Reference: docs/emulator.md, "Reference: fpx-collect emulator" (in the package: node_modules/fpx-collect/docs/).

Exit codes: 0 stopped by a signal, 2 usage error or invalid config, 3 could not start (port in use, or
the optional package fastify is not installed).
`

/** Resolves on SIGINT or SIGTERM, so the emulator saves its state and closes its port before the process ends. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve(signal)
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}

export async function emulator(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    config: { type: 'string' },
    state: { type: 'string' },
    strict: { type: 'boolean' },
    'show-credentials': { type: 'boolean' },
  })
  if (helpRequested(args, io, EMULATOR_HELP)) return EXIT.ok
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${args.positionals[0]}`)
  const port = Number(args.string('port') ?? '4010')
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port is a whole number from 0 to 65535')
  const configFile = args.string('config')
  const config = configFile === undefined ? undefined : (readJsonFile(configFile) as EmulatorConfig)
  // The built-in demo credentials are made up and meant to be copied into an app; any others (a config file's,
  // or a state file's, which keeps the merchants of the config it was started with) may be someone's own, so
  // those stay hidden unless asked for.
  const show = args.boolean('show-credentials')
  const demo = new Set([DEMO_MERCHANT, DEMO_PARTNER].flatMap((shop) => (shop.credentials ?? []).flatMap((set) => [set.authToken, set.checksumToken])))

  let running
  try {
    running = await startEmulator({
      port,
      host: args.string('host') ?? '127.0.0.1',
      config,
      stateFile: args.string('state'),
      // Only when asked, so a config file's own `strict` setting is not overridden by the flag's absence.
      ...(args.boolean('strict') ? { strict: true } : {}),
    })
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message)
    io.err(`fpx-collect emulator: cannot start: ${(error as Error).message}\n`)
    return EXIT.failure
  }
  const secret = (value: string) => (show || demo.has(value) ? value : '(set; see config)')
  const lines = [`fpx-collect emulator listening`, `  base URL     ${running.baseUrl}`, `  control API  ${running.url}/__emulator/`]
  for (const merchant of running.state.setup.merchants) {
    lines.push(`merchant "${merchant.name}" (B2B1 ${merchant.b2b1 ? 'on' : 'off'})`)
    for (const set of merchant.credentials)
      lines.push(`  API UID ${set.uid}  Auth Token ${secret(set.authToken)}  Checksum Token ${secret(set.checksumToken)}`)
  }
  for (const partner of running.state.setup.partners) {
    lines.push(`partner "${partner.name}"`, `  partner_uid ${partner.partnerUids.join(', ')}`)
    for (const set of partner.credentials) lines.push(`  API UID ${set.uid}  Auth Token ${secret(set.authToken)}`)
  }
  lines.push('Press Ctrl+C to stop.')
  // Listening before the banner: a signal sent the moment it shows still stops the emulator cleanly (its state saved).
  const signalled = untilSignal()
  io.out(`${lines.join('\n')}\n`)
  const signal = await signalled
  await running.stop()
  io.out(`stopped (${signal})\n`)
  return EXIT.ok
}
