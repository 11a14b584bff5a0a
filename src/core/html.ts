/*
 * The HTML every part writes (the receiver's result pages, the payment form, the emulator's hosted pages): one
 * escaper and one document shell, so a fix to either reaches them all.
 */

/**
 * Text for element content and double- or single-quoted attribute values. CR and LF go as character references:
 * the HTML parser would turn a raw CR LF into LF in an attribute before a form ever posted it.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'\r\n]/g, (character) => `&#${character.charCodeAt(0)};`)
}

export interface HtmlDocument {
  readonly title: string
  /** CSS for a <style> element, if any. */
  readonly style?: string
  /** More of <head> (a meta refresh), already escaped. */
  readonly head?: string
  /** Attributes of <body>, already escaped. */
  readonly bodyAttributes?: string
  /** The body's HTML, already escaped. */
  readonly body: string
}

/** A self-contained page: UTF-8, readable on a phone, kept out of search engines. */
export function htmlDocument({ title, style, head, bodyAttributes, body }: HtmlDocument): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>${head === undefined ? '' : `\n${head}`}${style === undefined ? '' : `\n<style>\n${style}\n</style>`}
</head>
<body${bodyAttributes === undefined ? '' : ` ${bodyAttributes}`}>
${body}
</body>
</html>
`
}
