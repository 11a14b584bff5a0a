import { Agent, request } from 'node:http'
import type { Send } from './plan.js'
import { ATTEMPT_HEADER, CALLBACK_PATH, DELIVERY_HEADER, REDIRECT_PATH } from './protocol.js'
import type { Fleet } from './workers.js'

/*
 * The service's side: post a delivery until some process answers 2xx, as the service redelivers what it did
 * not see acknowledged. 409 with Retry-After waits that long; anything else (5xx, a dropped connection, a
 * refused one while a worker restarts) backs off exponentially. A delivery that never got its 2xx is lost.
 */

const REQUEST_TIMEOUT_MS = 30_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface SendStats {
  /** HTTP requests made, first attempts and retries. */
  requests: number
  retries: number
  /** Deliveries that exhausted their attempts without a 2xx. */
  lost: Send[]
  /** By status and, for refusals, the receiver's error code ("409 in_progress"), or the network error. */
  responses: Map<string, number>
}

interface Answer {
  status: number
  retryAfterS: number | undefined
  code: string | undefined
}

function errorCode(status: number, body: string): string | undefined {
  if (status < 300) return undefined
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code
  } catch {
    // The redirect route answers a person, in HTML, with the code at the bottom.
    return /Error code: ([a-z_]+)/.exec(body)?.[1]
  }
}

export class Sender {
  readonly stats: SendStats = { requests: 0, retries: 0, lost: [], responses: new Map() }
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256 })

  constructor(
    private readonly fleet: Fleet,
    private readonly maxAttempts: number,
  ) {}

  private count(label: string): void {
    this.stats.responses.set(label, (this.stats.responses.get(label) ?? 0) + 1)
  }

  private post(port: number, send: Send, attempt: number): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const outgoing = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: send.kind === 'callback' ? CALLBACK_PATH : REDIRECT_PATH,
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            'content-type': send.contentType,
            'content-length': Buffer.byteLength(send.body),
            [DELIVERY_HEADER]: String(send.delivery),
            [ATTEMPT_HEADER]: String(attempt),
          },
        },
        (response) => {
          const chunks: Buffer[] = []
          response.on('data', (chunk: Buffer) => chunks.push(chunk))
          response.on('error', reject)
          response.on('end', () => {
            const status = response.statusCode ?? 0
            const retryAfter = Number(response.headers['retry-after'])
            resolve({
              status,
              retryAfterS: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
              code: errorCode(status, Buffer.concat(chunks).toString('utf8')),
            })
          })
        },
      )
      outgoing.on('timeout', () => outgoing.destroy(new Error('timeout')))
      outgoing.on('error', reject)
      outgoing.end(send.body)
    })
  }

  /** Sends `send` until a 2xx, first to the worker in slot `preferred`, then to any live one. */
  async deliver(send: Send, preferred: number): Promise<boolean> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const worker = this.fleet.pick(attempt === 1 ? preferred : Math.floor(Math.random() * this.fleet.size))
      if (worker === undefined) {
        // Every worker is down at once; not the delivery's fault, so not an attempt.
        attempt--
        await sleep(50)
        continue
      }
      if (attempt > 1) this.stats.retries++
      this.stats.requests++
      worker.inFlight++
      let answer: Answer | undefined
      try {
        answer = await this.post(worker.port, send, attempt)
      } catch (error) {
        this.count(`network ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
      } finally {
        worker.inFlight--
      }
      if (answer !== undefined) {
        this.count(answer.code === undefined ? String(answer.status) : `${answer.status} ${answer.code}`)
        if (answer.status >= 200 && answer.status < 300) return true
      }
      const backoff = Math.min(1000, 20 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2)
      const retryAfterMs = answer?.status === 409 && answer.retryAfterS !== undefined ? answer.retryAfterS * 1000 : undefined
      await sleep(retryAfterMs === undefined ? backoff : retryAfterMs + Math.random() * 100)
    }
    this.stats.lost.push(send)
    return false
  }

  close(): void {
    this.agent.destroy()
  }
}
