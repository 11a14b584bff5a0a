/*
 * Results per hour by outcome as an inline SVG of stacked bars: drawn by the server, sized by attributes (the
 * page's CSP allows no style attribute and no script), each bar with a title a browser shows on hover.
 */
import type { HourCounts } from '../contract/payment-book.js'
import { html, type Html } from './markup.js'
import type { View } from './view.js'

const HEIGHT = 140
const WIDTH = 960
const LABELS = 16
const COLOURS = { succeeded: '#12b76a', failed: '#f04438', pending: '#2e90fa' } as const

export function resultsChart(view: View, hours: readonly HourCounts[]): Html {
  if (hours.length === 0) return html``
  const width = WIDTH
  const slot = width / hours.length
  const bar = Math.max(0.5, slot * 0.8)
  const top = Math.max(1, ...hours.map((hour) => hour.succeeded + hour.failed + hour.pending))
  const scale = HEIGHT / top
  const step = Math.max(1, Math.ceil(hours.length / LABELS))
  // A day spans 25 hours when it starts mid-hour: labelled by the hour alone.
  const long = hours.length > 25
  const bars = hours.map((hour, index) => {
    const x = index * slot
    let y = HEIGHT
    const parts = (['succeeded', 'failed', 'pending'] as const).map((outcome) => {
      const height = hour[outcome] * scale
      y -= height
      return hour[outcome] === 0 ? '' : html`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${bar.toFixed(1)}" height="${height.toFixed(1)}" fill="${COLOURS[outcome]}"></rect>`
    })
    const local = view.time(hour.hour)
    const label = index % step === 0 ? html`<text x="${x.toFixed(1)}" y="${HEIGHT + 14}">${long ? local.slice(5, 13) : local.slice(11, 16)}</text>` : ''
    return html`<g><title>${local}: ${hour.succeeded} paid, ${hour.failed} failed, ${hour.pending} pending approval</title>${parts}<rect x="${x.toFixed(1)}" y="0" width="${slot.toFixed(1)}" height="${HEIGHT}" fill="transparent"></rect>${label}</g>`
  })
  const total = hours.reduce((sum, hour) => sum + hour.succeeded + hour.failed + hour.pending, 0)
  // Room on the right for the last label.
  return html`<svg class="chart" viewBox="0 0 ${width + 60} ${HEIGHT + 20}" width="100%" role="img" aria-label="${`Results handled per hour: ${total} in the window`}">
<line x1="0" y1="${HEIGHT}" x2="${width}" y2="${HEIGHT}" stroke="#d8dee6"></line>${bars}</svg>
<p class="legend muted"><span class="s"></span>paid<span class="f"></span>failed<span class="p"></span>pending approval (99) · highest hour ${top} · ${total} in the window, by the hour each was handled</p>`
}
