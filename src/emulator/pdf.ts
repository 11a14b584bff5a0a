/**
 * A minimal PDF 1.4 writer for the emulator's receipts: one A4 page of Helvetica text lines, uncompressed.
 * Hand-written rather than a dependency because the structure is small and fixed: header, five objects, a
 * cross-reference table with the byte offset of each object, and a trailer. The output is pure ASCII, so
 * string length equals byte length and the offsets are exact.
 */

/** Text for a PDF literal string in WinAnsiEncoding: Latin-1 letters as octal escapes, anything else as '?'. */
function pdfString(text: string): string {
  let out = ''
  for (const character of text) {
    const code = character.codePointAt(0) as number
    if (character === '\\' || character === '(' || character === ')') out += `\\${character}`
    else if (code >= 0x20 && code < 0x7f) out += character
    else if (code >= 0xa0 && code <= 0xff) out += `\\${code.toString(8).padStart(3, '0')}`
    else out += '?'
  }
  return `(${out})`
}

export interface PdfLine {
  readonly text: string
  /** Points; default 11. */
  readonly size?: number
  /** Use Helvetica-Bold. */
  readonly bold?: boolean
}

const PAGE_WIDTH = 595
const PAGE_HEIGHT = 842
const MARGIN = 56

function contentStream(lines: readonly PdfLine[]): string {
  let y = PAGE_HEIGHT - MARGIN
  const operations: string[] = []
  for (const line of lines) {
    const size = line.size ?? 11
    y -= Math.round(size * 1.6)
    // Each line is positioned absolutely (Tm), so a long line can never shift the ones after it.
    operations.push(`BT /${line.bold === true ? 'F2' : 'F1'} ${size} Tf 1 0 0 1 ${MARGIN} ${y} Tm ${pdfString(line.text)} Tj ET`)
  }
  return `${operations.join('\n')}\n`
}

/** A one-page PDF document with the given lines, top to bottom, and a document title. */
export function pdfDocument(title: string, lines: readonly PdfLine[]): string {
  const content = contentStream(lines)
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] /Resources << /Font << /F1 4 0 R /F2 5 0 R >> >> /Contents 6 0 R >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>',
    `<< /Length ${content.length} >>\nstream\n${content}endstream`,
    `<< /Title ${pdfString(title)} /Producer (fpx-collect emulator) >>`,
  ]
  let file = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((body, index) => {
    offsets.push(file.length)
    file += `${index + 1} 0 obj\n${body}\nendobj\n`
  })
  const xrefOffset = file.length
  // Each entry is exactly 20 bytes: ten-digit offset, space, five-digit generation, space, type, space, newline.
  file += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) file += `${String(offset).padStart(10, '0')} 00000 n \n`
  file += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info ${objects.length} 0 R >>\nstartxref\n${xrefOffset}\n%%EOF\n`
  return file
}
