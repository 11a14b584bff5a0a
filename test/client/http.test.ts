import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { FpxApiError, FpxNetworkError, FpxTimeoutError } from '../../src/client/index.js'
import { backoffMs, retryAfterMs } from '../../src/client/http.js'
import { demoClient, DEMO, type Emulator, launch, memoryLogger, paymentInput } from './helpers.js'
import { faultyProxy } from './proxy.js'

let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

const through = (baseUrl: string, options: Parameters<typeof demoClient>[1] = {}) => demoClient(emulator, { environment: { baseUrl }, ...options })

async function paymentCount(): Promise<number> {
  return ((await (await emulator.control('/payments')).json()) as { payments: unknown[] }).payments.length
}

describe('retries of reads', () => {
  it.each([500, 502, 503, 429])('retries a GET answered %i, then succeeds', async (status) => {
    const proxy = await faultyProxy(emulator.url, 2, status)
    try {
      const list = await through(proxy.baseUrl, { maxRetries: 2 }).publicBanks('b2c')
      expect(list.banks.length).toBeGreaterThan(0)
      expect(proxy.requests).toEqual(Array(3).fill('GET /api/public/v1/banks/b2c'))
    } finally {
      await proxy.close()
    }
  })

  it('gives up after maxRetries with FpxApiError carrying status and body', async () => {
    const proxy = await faultyProxy(emulator.url, 10, 503)
    try {
      const error = await through(proxy.baseUrl, { maxRetries: 1 }).transactions().catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(FpxApiError)
      expect(error).toMatchObject({ status: 503, code: 'proxy_fault', body: { error: 'the proxy says no' } })
      expect(proxy.requests).toHaveLength(2)
    } finally {
      await proxy.close()
    }
  })

  it('waits as long as Retry-After says', async () => {
    const proxy = await faultyProxy(emulator.url, 1, 429, { 'retry-after': '1' })
    const { lines, logger } = memoryLogger()
    try {
      await through(proxy.baseUrl, { logger }).validateCredentials()
      expect(proxy.requests).toHaveLength(2)
      expect(lines.join('\n')).toContain('"waitMs":1000')
      for (const secret of [DEMO.authToken, DEMO.checksumToken]) expect(lines.join('\n')).not.toContain(secret)
    } finally {
      await proxy.close()
    }
  })

  it('warns on the console about a retry when no logger is given, and not with logger: false', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const proxy = await faultyProxy(emulator.url, 2, 503)
    try {
      await through(proxy.baseUrl, { maxRetries: 2, retryDelayMs: 1 }).publicBanks('b2c')
      expect(warn.mock.calls.map((call) => String(call[0]))).toEqual(Array(2).fill('fpx-collect: the service answered with a retryable status; retrying'))
      for (const secret of [DEMO.authToken, DEMO.checksumToken]) expect(JSON.stringify(warn.mock.calls)).not.toContain(secret)
      warn.mockClear()
      const silenced = await faultyProxy(emulator.url, 1, 503)
      try {
        await through(silenced.baseUrl, { logger: false, retryDelayMs: 1 }).publicBanks('b2c')
        expect(silenced.requests).toHaveLength(2)
        expect(warn).not.toHaveBeenCalled()
      } finally {
        await silenced.close()
      }
    } finally {
      warn.mockRestore()
      await proxy.close()
    }
  })

  it('does not retry a 4xx other than 429', async () => {
    const proxy = await faultyProxy(emulator.url, 10, 404)
    try {
      await expect(through(proxy.baseUrl).paymentStatus('X')).rejects.toMatchObject({ status: 404 })
      expect(proxy.requests).toHaveLength(1)
    } finally {
      await proxy.close()
    }
  })

  it('retries network errors of a GET (a fetch that fails the first call)', async () => {
    let calls = 0
    const flaky: typeof fetch = (input, init) => (++calls === 1 ? Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } })) : fetch(input, init))
    const list = await demoClient(emulator, { fetch: flaky }).publicBanks('b2b')
    expect(list.banks.length).toBeGreaterThan(0)
    expect(calls).toBe(2)
  })
})

describe('payment creation is never retried', () => {
  it('sends a 503-answered createPayment once and creates nothing', async () => {
    const proxy = await faultyProxy(emulator.url, 1, 503)
    const before = await paymentCount()
    try {
      await expect(through(proxy.baseUrl, { maxRetries: 5 }).createPayment(paymentInput())).rejects.toMatchObject({ status: 503 })
      expect(proxy.requests).toEqual(['POST /api/v1/payments'])
      expect(await paymentCount()).toBe(before)
    } finally {
      await proxy.close()
    }
  })

  it('sends a session creation that hit a network error once', async () => {
    let calls = 0
    const failing: typeof fetch = () => {
      calls++
      return Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }))
    }
    const error = await demoClient(emulator, { fetch: failing, maxRetries: 5 }).createPaymentSession({ transaction_amount: '1.00' }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxNetworkError)
    expect((error as Error).message).toContain('ECONNRESET')
    expect(calls).toBe(1)
  })
})

describe('time-outs and network errors', () => {
  it('throws FpxTimeoutError when the server never answers, after the allowed retries', async () => {
    const proxy = await faultyProxy(emulator.url, 10, 'hang')
    try {
      const error = await through(proxy.baseUrl, { timeoutMs: 100, maxRetries: 1 }).transactions().catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(FpxTimeoutError)
      expect((error as FpxTimeoutError).timeoutMs).toBe(100)
      expect(proxy.requests).toHaveLength(2)
    } finally {
      await proxy.close()
    }
  })

  it('throws FpxNetworkError for a refused connection, without secrets in the message', async () => {
    const proxy = await faultyProxy(emulator.url, 0, 500)
    await proxy.close()
    const error = await through(proxy.baseUrl, { maxRetries: 0 }).validateCredentials().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxNetworkError)
    expect((error as Error).message).toContain('ECONNREFUSED')
    for (const secret of [DEMO.authToken, DEMO.checksumToken]) expect((error as Error).message).not.toContain(secret)
  })
})

describe('back-off', () => {
  it('doubles the ceiling per attempt, with full jitter', () => {
    expect([0, 1, 2, 3].map((attempt) => backoffMs(attempt, 100, () => 0.999))).toEqual([99, 199, 399, 799])
    expect(backoffMs(3, 100, () => 0)).toBe(0)
    expect(backoffMs(30, 100, () => 0.5)).toBe(5000)
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000)
    expect(retryAfterMs('Wed, 21 Oct 2026 07:28:10 GMT', Date.parse('Wed, 21 Oct 2026 07:28:00 GMT'))).toBe(10_000)
    expect(retryAfterMs('soon')).toBeUndefined()
    expect(retryAfterMs(null)).toBeUndefined()
  })
})
