/*
 * How the console writes HTML: every page is built with the `html` tag, which escapes every value it is given
 * through the one escaper (core/html.ts) unless the value is markup the tag built itself. Buyer-controlled text
 * (names, e-mails, order numbers, params, messages) can only reach a page as a value, so it is always text.
 */
import { escapeHtml } from '../core/html.js'

const MADE_HERE = Symbol('markup')

/** Markup built by `html` (or `joinHtml`): inserted as it is. Nothing else is ever inserted unescaped. */
export class Html {
  readonly #text: string
  /** Only this module makes one: no page can wrap outside text in Html, by mistake or otherwise. */
  constructor(made: symbol, text: string) {
    if (made !== MADE_HERE) throw new TypeError('Html is made by the html tag only')
    this.#text = text
  }

  toString(): string {
    return this.#text
  }
}

/** What a page may put in markup: text and numbers (escaped), markup, lists of them; nothing for null, undefined or false. */
export type Part = Html | string | number | null | undefined | false | readonly Part[]

function render(part: Part): string {
  if (part instanceof Html) return part.toString()
  if (Array.isArray(part)) return part.map(render).join('')
  if (part === null || part === undefined || part === false) return ''
  return escapeHtml(String(part))
}

/** html`<td>${buyerName}</td>`: the values escaped, the template's own text kept. */
export function html(strings: TemplateStringsArray, ...values: readonly Part[]): Html {
  let text = strings[0] ?? ''
  values.forEach((value, index) => {
    text += render(value) + (strings[index + 1] ?? '')
  })
  return new Html(MADE_HERE, text)
}

/** Parts in a row, each escaped as `html` escapes a value, with `separator` (markup of the page's own) between. */
export function joinHtml(parts: readonly Part[], separator: Html = html``): Html {
  return new Html(MADE_HERE, parts.map(render).join(separator.toString()))
}
