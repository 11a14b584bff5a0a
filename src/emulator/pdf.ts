/**
 * The emulator's receipts (receipt_url) as PDF, drawn by pdfkit. pdfkit is an optional peer dependency: only
 * receipts need it, so it is imported when the first receipt is asked for, never when the package loads, and
 * without it that one request is answered 503 with the package to install while the rest of the emulator runs.
 */
import { ApiError } from './errors.js'

export interface PdfLine {
  readonly text: string
  /** Points; default 11. */
  readonly size?: number
  /** Use Helvetica-Bold. */
  readonly bold?: boolean
}

type PdfKit = typeof import('pdfkit')

const PDF_PACKAGE = 'pdfkit'

let loaded: PdfKit | undefined

function isMissingModule(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
}

async function loadPdfKit(): Promise<PdfKit> {
  try {
    loaded ??= (await import('pdfkit')).default
    return loaded
  } catch (error) {
    if (!isMissingModule(error)) throw error
    throw new ApiError(
      503,
      'missing_dependency',
      `receipts need the optional package ${PDF_PACKAGE}, which is not installed: npm install --save-dev ${PDF_PACKAGE} (or npx -p fpx-collect -p ${PDF_PACKAGE} fpx-collect emulator)`,
    )
  }
}

/**
 * The standard PDF fonts cover Latin-1 (WinAnsiEncoding) only, and pdfkit would print other characters as
 * unrelated Latin-1 ones; a '?' shows honestly that something was left out.
 */
function latin1(text: string): string {
  return text.replace(/[^\x20-\x7e\xa0-\xff]/gu, '?')
}

/** A one-page A4 PDF document with the given lines, top to bottom, and a document title. */
export async function pdfDocument(title: string, lines: readonly PdfLine[]): Promise<Uint8Array> {
  const PDFDocument = await loadPdfKit()
  const document = new PDFDocument({ size: 'A4', margin: 56, info: { Title: title, Producer: 'fpx-collect emulator' } })
  const chunks: Uint8Array[] = []
  const finished = new Promise<void>((resolve, reject) => {
    document.on('data', (chunk: Uint8Array) => chunks.push(chunk))
    document.on('end', resolve)
    document.on('error', reject)
  })
  for (const line of lines) {
    document.font(line.bold === true ? 'Helvetica-Bold' : 'Helvetica').fontSize(line.size ?? 11)
    if (line.text === '') document.moveDown()
    else document.text(latin1(line.text), { lineGap: 4 })
  }
  document.end()
  await finished
  return Buffer.concat(chunks)
}
