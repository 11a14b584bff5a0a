/*
 * What every page is rendered with: where the console is mounted, the offset its times are shown at, the
 * operator's name and form token, and the small formats every page shares (times, amounts, ages).
 */
import { localTime } from '../core/time.js'
import { CSRF_FIELD } from './guard.js'
import { html, type Html } from './markup.js'

export type LinkParams = Readonly<Record<string, string | number | null | undefined>>

export class View {
  constructor(
    readonly basePath: string,
    readonly offsetMinutes: number,
    readonly operator: string,
    readonly csrf: string,
    readonly now: Date,
  ) {}

  /** A link inside the console: `path` under the mount, the params URL-encoded (the html tag escapes the whole). */
  link(path: string, params: LinkParams = {}): string {
    const query = new URLSearchParams()
    for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') query.set(name, String(value))
    const text = query.toString()
    return `${this.basePath}${path}${text === '' ? '' : `?${text}`}`
  }

  /** `2026-11-27 14:03:05 +08:00`, or `-`. */
  time(date: Date | null | undefined): string {
    return localTime(date ?? null, this.offsetMinutes)
  }

  /** The offset as the pages name it: `UTC+08:00`. */
  get zone(): string {
    return `UTC${localTime(new Date(0), this.offsetMinutes).slice(-6)}`
  }

  /** A POST form to an action of the console, carrying the form token. */
  form(path: string, fields: LinkParams, label: string, attributes: { readonly name?: string; readonly danger?: boolean } = {}): Html {
    const hidden = Object.entries(fields)
      .filter(([, value]) => value !== undefined && value !== null)
      .map(([name, value]) => html`<input type="hidden" name="${name}" value="${String(value)}">`)
    return html`<form method="post" action="${this.link(path)}" class="inline"><input type="hidden" name="${CSRF_FIELD}" value="${this.csrf}">${hidden}<button type="submit"${attributes.danger === true ? html` class="danger"` : ''}${attributes.name === undefined ? '' : html` name="${attributes.name}"`}>${label}</button></form>`
  }
}

/** RM 100.20 */
export function ringgit(sen: number | null | undefined): string {
  if (sen === null || sen === undefined || !Number.isFinite(sen)) return '-'
  const whole = Math.floor(Math.abs(sen) / 100)
  return `${sen < 0 ? '-' : ''}RM ${whole.toLocaleString('en-MY')}.${String(Math.abs(sen) % 100).padStart(2, '0')}`
}

/** An age as an operator reads it: 45s, 12m, 2h05m, 3d04h. */
export function age(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h${String(minutes % 60).padStart(2, '0')}m`
  return `${Math.floor(hours / 24)}d${String(hours % 24).padStart(2, '0')}h`
}
