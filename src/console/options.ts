import { MALAYSIA_OFFSET_MINUTES, parseOffset } from '../core/time.js'

/**
 * What `authorize` answers: false, null or undefined refuse the request (403); true lets it through as "an
 * operator"; a name (or `{ name }`) lets it through as that person, whose name the console writes on the timeline
 * of every payment they act on.
 */
export type Authorization = boolean | string | { readonly name: string } | null | undefined

/** Decides, for every request, whether it may use the console (and as whom). May be async. */
export type Authorize = (request: Request) => Authorization | Promise<Authorization>

export interface ConsoleOptions {
  /**
   * Who may use the console: called with every request, before anything is read. Required: a console mounted
   * without it refuses every request (403), since it shows buyers' names and e-mails and can re-run handlers.
   */
  readonly authorize?: Authorize
  /** Where the console is mounted (`/admin/payments`): its links start with it. The framework mounts set it. */
  readonly basePath?: string
  /** The offset times are shown at: minutes from UTC, or text such as `+08:00` or `UTC`. Default Malaysia time, +08:00. */
  readonly utcOffset?: number | string
  /** The pages' title. Default `fpx-collect console`. */
  readonly title?: string
  /**
   * Send the console's cookie with `Secure` (HTTPS only). Default: when the request's URL is https. Say true
   * behind a proxy that ends TLS and forwards plain HTTP.
   */
  readonly secureCookies?: boolean
}

export interface ConsoleSettings {
  readonly authorize: Authorize | undefined
  readonly basePath: string
  readonly offsetMinutes: number
  readonly title: string
  readonly secureCookies: boolean | undefined
}

/** The options checked, with their defaults; TypeError on anything else. */
export function consoleSettings(options: ConsoleOptions = {}): ConsoleSettings {
  if (options === null || typeof options !== 'object') throw new TypeError('the console options must be an object')
  const { authorize, basePath = '', utcOffset = MALAYSIA_OFFSET_MINUTES, title = 'fpx-collect console', secureCookies } = options
  if (authorize !== undefined && typeof authorize !== 'function') throw new TypeError('authorize must be a function (request) => false | true | name')
  if (typeof basePath !== 'string' || !(basePath === '' || /^\/[^?#]*$/.test(basePath)))
    throw new TypeError('basePath must be empty or a path starting with /, such as /admin/payments')
  const offsetMinutes = typeof utcOffset === 'number' ? utcOffset : parseOffset(utcOffset)
  if (!(Number.isInteger(offsetMinutes) && Math.abs(offsetMinutes) <= 14 * 60)) throw new TypeError('utcOffset must be whole minutes within ±14 hours, or text such as +08:00')
  if (typeof title !== 'string' || title === '') throw new TypeError('title must be non-empty text')
  if (secureCookies !== undefined && typeof secureCookies !== 'boolean') throw new TypeError('secureCookies must be a boolean')
  return { authorize, basePath: basePath.replace(/\/+$/, ''), offsetMinutes, title, secureCookies }
}
