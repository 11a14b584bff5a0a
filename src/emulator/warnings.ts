/**
 * What the emulator tolerated. Outside strict mode it accepts what the real service is seen to accept
 * (docs/emulator.md, "Where the spec is silent"), and says so: each oddity is a warning in the emulator's log
 * and in this list, which the control API shows (`GET /__emulator/warnings`), so a merchant sees "amount 200
 * was normalised to 200.00" instead of a silent pass. Warnings never carry secrets: they quote only the
 * offending field's value, and no field that holds a token is ever quoted.
 */
export interface EmulatorWarning {
  readonly id: number
  /** ISO 8601 instant. */
  readonly at: string
  /** `request` for an API call the emulator answered, `delivery` for a callback it sent. */
  readonly source: 'request' | 'delivery'
  /** `POST /v1/payments` and the like, relative to {base_url}; the callback_url's delivery id for deliveries. */
  readonly where: string
  /** The payment concerned, once it exists. */
  readonly exchangeNumber: string | null
  readonly message: string
}

/** The newest warnings kept; older ones drop off so a long-running emulator does not grow without bound. */
export const MAX_WARNINGS = 1000

export class WarningLog {
  private entries: EmulatorWarning[] = []
  private nextId = 1

  constructor(
    /** The emulator's log (standard error by default). */
    public log: (line: string) => void = (line) => console.error(line),
  ) {}

  add(source: EmulatorWarning['source'], where: string, exchangeNumber: string | null, messages: readonly string[]): EmulatorWarning[] {
    const added = messages.map((message) => ({ id: this.nextId++, at: new Date().toISOString(), source, where, exchangeNumber, message }))
    for (const warning of added) {
      this.entries.push(warning)
      this.log(`fpx-collect emulator: warning: ${warning.message} (${where}${exchangeNumber === null ? '' : `, ${exchangeNumber}`})`)
    }
    if (this.entries.length > MAX_WARNINGS) this.entries.splice(0, this.entries.length - MAX_WARNINGS)
    return added
  }

  list(exchangeNumber?: string | null): EmulatorWarning[] {
    return exchangeNumber === undefined || exchangeNumber === null ? [...this.entries] : this.entries.filter((entry) => entry.exchangeNumber === exchangeNumber)
  }

  clear(): void {
    this.entries = []
    this.nextId = 1
  }
}

export function warningJson(warning: EmulatorWarning): Record<string, unknown> {
  return {
    id: warning.id,
    at: warning.at,
    source: warning.source,
    where: warning.where,
    exchange_number: warning.exchangeNumber,
    message: warning.message,
  }
}
