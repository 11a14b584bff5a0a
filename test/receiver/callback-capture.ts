import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A callback_url that keeps every body posted to it, by exchange_number, and answers 200: genuine signed results. */
export interface CallbackCapture {
  readonly url: string
  /** The bodies received for this payment once there are `count` of them (an empty list after ~5 s). */
  bodies(exchangeNumber: string, count: number): Promise<string[]>
  close(): Promise<void>
}

export async function captureCallbacks(): Promise<CallbackCapture> {
  const captured = new Map<string, string[]>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const exchange = new URLSearchParams(body).get('exchange_number') ?? ''
      captured.set(exchange, [...(captured.get(exchange) ?? []), body])
      res.end('OK')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    async bodies(exchangeNumber, count) {
      for (let i = 0; i < 500 && (captured.get(exchangeNumber)?.length ?? 0) < count; i++) await new Promise((resolve) => setTimeout(resolve, 10))
      return captured.get(exchangeNumber) ?? []
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
