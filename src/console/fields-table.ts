/*
 * A record of fields as a table (the API's record of a payment, an inbox entry's fields as delivered), with what
 * must never be shown left out: the credentials a result may carry (the service can send the Auth Token as
 * `token`) and the checksum.
 */
import { html, type Html } from './markup.js'

const HIDDEN = new Set(['token', 'auth_token', 'authToken', 'checksum', 'checksum_token', 'checksumToken'])

export function fieldsTable(fields: Readonly<Record<string, unknown>>, className: string): Html {
  const rows = Object.entries(fields)
    .filter(([name]) => !HIDDEN.has(name))
    .map(([name, value]) => html`<tr><th>${name}</th><td class="mono">${value === null ? 'null' : typeof value === 'object' ? JSON.stringify(value) : String(value)}</td></tr>`)
  return html`<table class="${className}"><tbody>${rows}</tbody></table>`
}
