import { htmlDocument } from '../core/html.js'

export { escapeHtml } from '../core/html.js'

const STYLE = `body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a;line-height:1.5}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{color:#555}dd{margin:0}`

/** A small self-contained page: no scripts, no external resources, readable on a phone. */
export function htmlPage(title: string, bodyHtml: string, head?: string): string {
  return htmlDocument({ title, style: STYLE, body: bodyHtml, ...(head === undefined ? {} : { head }) })
}
