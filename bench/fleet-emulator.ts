/**
 * bench/fleet.ts's emulator: the built package's startEmulator in a process of its own, so its CPU per delivery
 * can be set against the receivers' (issue 37, point 4). It posts every payment's callback itself, with its own
 * retries, and answers the confirmations' searches.
 */
import type { RunningEmulator } from '../src/emulator/index.js'
import { fromDist } from './dist.js'
import { serveParent } from './fleet-child.js'

const { startEmulator } = await fromDist<typeof import('../src/emulator/index.js')>('emulator')

/** Retries short enough that a step's callbacks settle within seconds, as many as the default's first minute has. */
const FLEET_DELIVERY = { attempts: 5, initialDelayMs: 1000, maxDelayMs: 4000, timeoutMs: 10_000 } as const

export interface EmulatorReady {
  url: string
  baseUrl: string
}

/** What the emulator's delivery log says of a step's callbacks. */
export interface CallbackSummary {
  total: number
  /** Deliveries still scheduled or being sent: not settled yet. */
  unsettled: number
  failed: number
  /** First attempts: how long each took (ms, as the emulator timed it) and what it was answered. */
  firstAttemptMs: number[]
  firstAnswers: Record<string, number>
  /** Callbacks that needed more than one attempt. */
  retried: number
}

interface DeliveryJson {
  state: string
  attempts: { duration_ms: number; status: number | null; error: string | null }[]
}

const logged: string[] = []
let logCount = 0
async function summary(): Promise<CallbackSummary> {
  // The control API is the only view of the delivery log (startEmulator does not hand out its deliverer); it
  // answers in pages, so every page is read.
  const deliveries: DeliveryJson[] = []
  for (let page: number | null = 1; page !== null; ) {
    const response = await fetch(`${emulator.url}/__emulator/deliveries?per_page=1000&page=${page}`)
    const body = (await response.json()) as { deliveries: DeliveryJson[]; next_page: number | null }
    deliveries.push(...body.deliveries)
    page = body.next_page
  }
  const result: CallbackSummary = { total: deliveries.length, unsettled: 0, failed: 0, firstAttemptMs: [], firstAnswers: {}, retried: 0 }
  for (const delivery of deliveries) {
    if (delivery.state === 'scheduled' || delivery.state === 'sending' || delivery.state === 'held') result.unsettled++
    if (delivery.state === 'failed') result.failed++
    if (delivery.attempts.length > 1) result.retried++
    const first = delivery.attempts[0]
    if (first === undefined) continue
    result.firstAttemptMs.push(first.duration_ms)
    const answer = first.status === null ? (first.error ?? 'no answer') : String(first.status)
    result.firstAnswers[answer] = (result.firstAnswers[answer] ?? 0) + 1
  }
  return result
}

const emulator: RunningEmulator = await startEmulator({
  port: 0,
  delivery: FLEET_DELIVERY,
  // The payments are made to be clean: any warning is worth showing, but a flood of them is not.
  log: (line) => {
    logCount++
    if (logged.length < 5) logged.push(line)
  },
})

serveParent(
  {
    summary,
    log: () => ({ count: logCount, first: logged }),
    reset: async () => {
      const response = await fetch(`${emulator.url}/__emulator/reset`, { method: 'POST', headers: { 'content-type': 'application/json' } })
      if (!response.ok) throw new Error(`reset answered ${response.status}`)
      await response.text()
    },
    close: () => emulator.stop(),
  },
  { url: emulator.url, baseUrl: emulator.baseUrl } satisfies EmulatorReady,
)
