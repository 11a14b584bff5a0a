import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startEmulatorCli } from '../cli/run.js'
import { DEMO, type Emulator, launch, paymentForm } from './harness.js'
import { withoutPackage } from '../without-package.js'

/** What an independent PDF reader (Mozilla's pdf.js) finds in a file. */
interface ReadPdf {
  pages: number
  /** Width and height of the first page in points. */
  size: [number, number]
  info: Record<string, unknown>
  /** Text lines of all pages, top to bottom. */
  lines: string[]
}

const STANDARD_FONTS = `${join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`

async function readPdf(bytes: Uint8Array): Promise<ReadPdf> {
  // A copy: pdf.js takes over the buffer it is given.
  const document = await getDocument({ data: new Uint8Array(bytes), standardFontDataUrl: STANDARD_FONTS }).promise
  try {
    const lines: string[] = []
    for (let number = 1; number <= document.numPages; number++) {
      let line = ''
      for (const item of (await (await document.getPage(number)).getTextContent()).items) {
        if (!('str' in item)) continue
        line += item.str
        if (item.hasEOL) [lines[lines.length], line] = [line, '']
      }
      if (line !== '') lines.push(line)
    }
    const [, , width, height] = (await document.getPage(1)).view as [number, number, number, number]
    const { info } = await document.getMetadata()
    return { pages: document.numPages, size: [Math.round(width), Math.round(height)], info: info as Record<string, unknown>, lines }
  } finally {
    await document.destroy()
  }
}

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

/** A paid payment's record from the control API (the fields status and search answer) and its receipt. */
async function paidReceipt(overrides: Record<string, string> = {}): Promise<{ record: Record<string, string>; response: Response; pdf: Uint8Array }> {
  const exchangeNumber = await emulator.pay(overrides)
  await emulator.complete(exchangeNumber, 'approve')
  const record = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, string>
  const response = await fetch(record.receipt_url!)
  return { record, response, pdf: new Uint8Array(await response.arrayBuffer()) }
}

describe('receipt_url PDF', () => {
  it('is one A4 page whose text a PDF reader finds: order, amount, exchange number, merchant, buyer and bank', async () => {
    const { record, response, pdf } = await paidReceipt({ order_number: 'ORD-RECEIPT-1', transaction_amount: '256.70' })
    expect(record.receipt_url).toBe(`${emulator.baseUrl}/v1/receipt/${record.exchange_number}.pdf?uid=${DEMO.uid}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/pdf')
    expect(Number(response.headers.get('content-length'))).toBe(pdf.length)
    expect(Buffer.from(pdf.subarray(0, 5)).toString('latin1')).toBe('%PDF-')

    const read = await readPdf(pdf)
    expect(read.pages).toBe(1)
    expect(read.size).toEqual([595, 842])
    expect(read.info).toMatchObject({ Title: 'Receipt ORD-RECEIPT-1', Producer: 'fpx-collect emulator' })
    expect(read.lines).toEqual(
      expect.arrayContaining([
        'Payment receipt',
        'Order number: ORD-RECEIPT-1',
        'Amount paid: RM 256.70',
        `Exchange number: ${record.exchange_number}`,
        `Merchant reference: ${record.merchant_reference_number}`,
        'Paid by: Nur Aisyah binti Ahmad <aisyah@example.com>',
        'Description: Two kilos of coffee beans',
        'Issued by the fpx-collect emulator. Not a real payment.',
      ]),
    )
    expect(read.lines.some((line) => line.startsWith(`Bank: ${record.fpx_bank} (FPX B2C)`))).toBe(true)
  })

  it('keeps Latin-1 letters and PDF delimiters, and shows characters the standard fonts lack as ?', async () => {
    const { response, pdf } = await paidReceipt({ buyer_name: 'José (Zé) \\ 陈大文 😀' })
    expect(response.status).toBe(200)
    expect((await readPdf(pdf)).lines).toContain('Paid by: José (Zé) \\ ??? ? <aisyah@example.com>')
  })

  it('fits the longest fields the service takes on the one page, wrapping long ones without losing text', async () => {
    const description = 'Kopi '.repeat(51).trim()
    const buyer = 'Nur Aisyah '.repeat(9).trim()
    const { pdf } = await paidReceipt({ product_description: description, buyer_name: buyer, order_number: 'O'.repeat(50) })
    const read = await readPdf(pdf)
    expect(read.pages).toBe(1)
    const text = read.lines.join(' ').replace(/\s+/g, ' ')
    expect(text).toContain(`Description: ${description} Paid by: ${buyer}`)
    expect(text).toContain(`Order number: ${'O'.repeat(50)}`)
  })
})

describe('receipt_url without the optional pdfkit', () => {
  it('answers 503 missing_dependency naming the package to install, while the rest of the emulator works', async () => {
    const hook = withoutPackage('pdfkit')
    const cli = await startEmulatorCli([], { NODE_OPTIONS: `--import=${hook}` })
    try {
      const created = await fetch(`${cli.baseUrl}/v1/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(paymentForm()).toString(),
      })
      expect(created.status).toBe(200)
      const exchangeNumber = created.headers.get('x-exchange-number')!
      const control = cli.baseUrl.replace(/\/api$/, '/__emulator')
      const completed = await fetch(`${control}/payments/${exchangeNumber}/complete`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: 'approve' }),
      })
      expect(completed.status).toBe(200)
      const address = ((await completed.json()) as { result: { receipt_url: string } }).result.receipt_url
      expect(address).toBe(`${cli.baseUrl}/v1/receipt/${exchangeNumber}.pdf?uid=${DEMO.uid}`)

      const response = await fetch(address)
      expect(response.status).toBe(503)
      expect(response.headers.get('content-type')).toContain('application/json')
      const body = (await response.json()) as { code: string; error: string }
      expect(body.code).toBe('missing_dependency')
      expect(body.error).toContain('npm install --save-dev pdfkit')
      // The status page of the same payment still renders: only the receipt needs the package.
      expect((await fetch(address.replace('/receipt/', '/status/').replace('.pdf', ''))).status).toBe(200)
    } finally {
      const { code } = await cli.stop()
      expect(code).toBe(0)
    }
  })
})
