/**
 * Times as an operator reads them: in Malaysia time by default, where the service and its merchants live, with
 * the offset written out so that a time is never mistaken for UTC. The CLI and the console print through it.
 */

/** Malaysia time (UTC+8, no daylight saving): the default offset of every printed time, in minutes. */
export const MALAYSIA_OFFSET_MINUTES = 480

/** `2026-11-27 14:03:05 +08:00` for a Date, at `offsetMinutes` from UTC; `-` for null. */
export function localTime(date: Date | null, offsetMinutes = MALAYSIA_OFFSET_MINUTES): string {
  if (date === null) return '-'
  const shifted = new Date(date.getTime() + offsetMinutes * 60_000).toISOString()
  const sign = offsetMinutes < 0 ? '-' : '+'
  const hours = String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0')
  const minutes = String(Math.abs(offsetMinutes) % 60).padStart(2, '0')
  return `${shifted.slice(0, 10)} ${shifted.slice(11, 19)} ${sign}${hours}:${minutes}`
}

/** An offset given as `+08:00`, `-05:30`, `+8` or `UTC`, in minutes; TypeError otherwise. */
export function parseOffset(text: string): number {
  if (/^(utc|z)$/i.test(text)) return 0
  const match = /^([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(text)
  const minutes = match === null ? NaN : Number(match[2]) * 60 + Number(match[3] ?? 0)
  if (match === null || minutes > 14 * 60) throw new TypeError(`"${text}" is not a UTC offset; give one such as +08:00, -05:30 or UTC`)
  return match[1] === '-' ? -minutes : minutes
}
