/*
 * Refused deliveries: how many per code since the receiver started, what each code means, and the latest ones
 * with their explanation. Anyone can send a delivery, so their numbers are what the sender claimed; they are kept
 * in the receiving process only (receiver.refusals()), never per payment in the store.
 */
import type { RefusalRecord } from '../receiver/refusals.js'
import type { Page } from './layout.js'
import { sourceLabel } from './life.js'
import { html } from './markup.js'
import type { ConsoleSource } from './source.js'
import type { View } from './view.js'

/** What each refusal code usually means for the operator, and where to look. */
const MEANINGS: Readonly<Record<string, string>> = {
  checksum_mismatch: 'The checksum does not match: a forged or altered message, or the wrong Checksum Token configured (see the diagnosis).',
  checksum_missing: 'No checksum field: not a message of the service (or a proxy removed it).',
  checksum_malformed: 'The checksum is not 64 hexadecimal digits.',
  unknown_uid: 'Signed for a merchant (uid) this receiver has no Checksum Token for.',
  invalid_fields: 'A field the receiver needs is missing or invalid.',
  duplicate_field: 'A field was sent twice with different values.',
  invalid_field_name: 'A field name the receiver refuses.',
  malformed_body: 'The body could not be read as a form or JSON.',
  empty_body: 'An empty delivery.',
  invalid_encoding: 'The body is not valid UTF-8.',
  needs_confirmation: 'Signature-only receiver: the result could stand under another name, so it needs the service API to confirm it.',
  result_mismatch: 'The result disagrees with what was asked for the order (amount, merchant): refused before any handler ran.',
  body_timeout: 'The body did not arrive in time.',
  body_too_large: 'The body was over the limit.',
  unsupported_media_type: 'A content type the receiver does not read.',
  unsupported_encoding: 'A content encoding the receiver does not read.',
}

function recentRow(view: View, record: RefusalRecord): ReturnType<typeof html> {
  const diagnosis = (record.diagnosis as { summary?: unknown } | undefined)?.summary
  return html`<tr data-code="${record.code ?? ''}"><td class="mono">${view.time(record.receivedAt)}</td><td>${sourceLabel(record.source)}</td><td class="mono">${record.code ?? '-'}</td><td class="num">${record.status}</td>
<td class="claimed">${record.orderNumber ?? '-'}<br>${record.exchangeNumber ?? ''}</td><td>${record.message ?? ''}${typeof diagnosis === 'string' ? html`<div class="muted">Diagnosis: ${diagnosis}</div>` : ''}</td></tr>`
}

export function refusalsPage(view: View, source: ConsoleSource): Page {
  const summary = source.refusals()
  if (summary === undefined)
    return {
      title: 'Refusals',
      section: 'refusals',
      body: html`<h1>Refusals</h1><p class="notice">Refused deliveries are never stored per payment (anyone can send them): each receiving process counts its own and keeps the latest 100 in memory. Mount the console in the app that receives the callbacks to see them; here, over the store alone, there are none to show.</p>`,
    }
  const codes = Object.entries(summary.byCode).sort((a, b) => b[1] - a[1])
  const recent = [...summary.recent].reverse().slice(0, 50)
  const body = html`<h1>Refusals</h1>
<p class="muted">Since this process started: ${summary.total} refused. The numbers below are what each message claimed, never verified.</p>
<h2>By code</h2>
<table><thead><tr><th>Code</th><th class="num">Count</th><th>What it means</th></tr></thead><tbody>
${codes.length === 0 ? html`<tr><td colspan="3" class="muted">No delivery has been refused.</td></tr>` : ''}
${codes.map(([code, count]) => html`<tr><td class="mono">${code}</td><td class="num" data-refusals="${code}">${count}</td><td>${MEANINGS[code] ?? 'See docs/receiving.md for this code.'}</td></tr>`)}
</tbody></table>
<h2>The latest, newest first</h2>
<table><thead><tr><th>Received (${view.zone})</th><th>From</th><th>Code</th><th class="num">Answer</th><th>Claimed order / exchange_number</th><th>Explanation</th></tr></thead><tbody>
${recent.length === 0 ? html`<tr><td colspan="6" class="muted">None kept.</td></tr>` : ''}
${recent.map((record) => recentRow(view, record))}
</tbody></table>`
  return { title: 'Refusals', section: 'refusals', body }
}
