import { request } from 'node:http'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../cli/run.js'
import { DEMO, type Emulator, launch, paymentForm } from './harness.js'
import { runScript, withoutPackage } from '../without-package.js'

const WITHOUT_FASTIFY = withoutPackage('fastify')
const WITH_FASTIFY4 = pathToFileURL(fileURLToPath(new URL('with-fastify4.mjs', import.meta.url))).href


let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

function post(path: string, body: string | Uint8Array, contentType?: string): Promise<Response> {
  return fetch(`${emulator.baseUrl}${path}`, { method: 'POST', headers: contentType === undefined ? {} : { 'content-type': contentType }, body })
}

/** A raw request, so the path reaches the server exactly as written (fetch would normalise it). */
function raw(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${emulator.url}${path}`, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('the emulator on Fastify keeps its HTTP answers', () => {
  it('answers HEAD on a GET route with the headers and no body', async () => {
    const response = await fetch(`${emulator.baseUrl}/public/v1/banks/b2c`, { method: 'HEAD' })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await response.text()).toBe('')
  })

  it('answers 405 with Allow naming every method of the path, in the JSON error shape', async () => {
    const response = await fetch(`${emulator.baseUrl}/apis/some-slug/payment_session`, { method: 'DELETE' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, POST')
    expect(await response.json()).toEqual({ error: 'use GET or POST', code: 'method_not_allowed' })
  })

  it('answers paths outside /api and the control API with a JSON 404', async () => {
    const response = await fetch(`${emulator.url}/v1/payments`)
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({ error: 'no endpoint here; the API is under /api', code: 'not_found' })
    const control = await fetch(`${emulator.url}/__emulator/nothing`)
    expect(await control.json()).toEqual({ error: 'no endpoint GET /nothing', code: 'not_found' })
  })

  it('answers 400 malformed_request to a path with invalid percent-encoding', async () => {
    const response = await raw('/api/v1/payments/status/%E0%A4%A')
    expect(response.status).toBe(400)
    expect(JSON.parse(response.body)).toEqual({ error: 'the path has invalid percent-encoding', code: 'malformed_request' })
  })

  it('decodes path parameters, longer ones included', async () => {
    const order = `ORD ${'9'.repeat(150)}`
    const response = await fetch(`${emulator.baseUrl}/v1/payments/status/${encodeURIComponent(order)}`, {
      headers: { authorization: `Basic ${Buffer.from(`${DEMO.uid}:${DEMO.authToken}`).toString('base64')}` },
    })
    expect(response.status).toBe(404)
    expect(((await response.json()) as { error: string }).error).toContain(order)
  })

  it('answers 413 body_too_large to a body over 64 KiB, and closes the connection', async () => {
    const response = await post('/v1/payments', `a=${'x'.repeat(70_000)}`, 'application/x-www-form-urlencoded')
    expect(response.status).toBe(413)
    expect(response.headers.get('connection')).toBe('close')
    expect(await response.json()).toMatchObject({ code: 'body_too_large' })
  })

  it('answers 415 to a body without a Content-Type and to an unreadable Content-Type', async () => {
    for (const type of [undefined, 'not a media type', 'text/plain']) {
      const response = await post('/v1/payments', new TextEncoder().encode('a=1'), type)
      expect(response.status).toBe(415)
      expect(await response.json()).toMatchObject({ code: 'unsupported_media_type' })
    }
  })

  it('reads forms with the core parser: bad escapes are 400, repeated names (nested too) are 422', async () => {
    const bad = await post('/v1/payments', 'order_number=%ZZ', 'application/x-www-form-urlencoded')
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'malformed_request', error: expect.stringContaining('order_number') })
    const repeated = await post('/v1/payments', 'a=1&a=2&params[reference1]=x&params%5Breference1%5D=y', 'application/x-www-form-urlencoded')
    expect(repeated.status).toBe(422)
    expect(await repeated.json()).toMatchObject({ fields: { a: 'sent more than once', 'params[reference1]': 'sent more than once' } })
  })

  it('takes `+` as a space and %2B as a plus in form values, as signed', async () => {
    const form = paymentForm({ buyer_name: 'Nur Aisyah+Ahmad' })
    const response = await post('/v1/payments', new URLSearchParams(form).toString(), 'application/x-www-form-urlencoded')
    expect(response.status).toBe(200)
    const exchangeNumber = response.headers.get('x-exchange-number')!
    const record = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, unknown>
    expect(JSON.stringify(record)).toContain('Nur Aisyah+Ahmad')
  })
})

describe('without the optional fastify', () => {
  it('`fpx-collect emulator` exits 3 (could not start) naming the package to install', async () => {
    const result = await runCli(['emulator', '--port', '0'], { env: { NODE_OPTIONS: `--import=${WITHOUT_FASTIFY}` } })
    expect(result.code).toBe(3)
    expect(result.stderr).toContain('the emulator needs the optional package fastify, which is not installed: npm install --save-dev fastify')
  })

  it('startEmulator rejects with that message, while the receiver and the emulator module still load', async () => {
    const script = `
      const receiver = await import('./src/index.ts')
      const { startEmulator } = await import('./src/emulator/index.ts')
      if (typeof receiver.createReceiver !== 'function') throw new Error('receiver did not load')
      try { await startEmulator(); console.log('started') } catch (error) { console.log('refused: ' + error.message) }`
    const { code, output } = await runScript(script, [WITHOUT_FASTIFY])
    expect(output).toContain('refused: the emulator needs the optional package fastify')
    expect(code).toBe(0)
  })
})

describe('on Fastify 4, the oldest version the peer range takes', () => {
  it('routes, normalises paths and answers as on Fastify 5', async () => {
    const script = `
      const { startEmulator } = await import('./src/emulator/index.ts')
      const emulator = await startEmulator()
      const answers = {}
      for (const [method, path] of [['GET', '/public/v1//banks/b2c/'], ['HEAD', '/public/v1/banks/b2c'], ['GET', '/v1/merchants/validate'], ['OPTIONS', '/public/v1/banks/b2b']]) {
        const response = await fetch(emulator.baseUrl + path, { method })
        answers[method + ' ' + path] = [response.status, response.headers.get('allow'), response.headers.get('access-control-allow-origin')]
      }
      const big = await fetch(emulator.baseUrl + '/v1/payments', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=' + 'x'.repeat(70000) })
      answers.big = [big.status, (await big.json()).code]
      await emulator.stop()
      console.log('fastify ' + (await import('fastify')).default().version + ' ' + JSON.stringify(answers))`
    const { code, output } = await runScript(script, [WITH_FASTIFY4])
    expect(code, output).toBe(0)
    const [, version, json] = /^fastify (\S+) (.*)$/m.exec(output) ?? []
    expect(version).toMatch(/^4\./)
    expect(JSON.parse(json ?? '{}')).toEqual({
      'GET /public/v1//banks/b2c/': [200, null, '*'],
      'HEAD /public/v1/banks/b2c': [200, null, '*'],
      'GET /v1/merchants/validate': [405, 'POST', null],
      'OPTIONS /public/v1/banks/b2b': [204, null, '*'],
      big: [413, 'body_too_large'],
    })
  })
})
