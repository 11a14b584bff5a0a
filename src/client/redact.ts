/*
 * What keeps the Auth Token and the Checksum Token out of everything the client hands back or throws. An upstream
 * may echo the request (a gateway's error page, a debugging proxy, a service that repeats its input in an error),
 * and errors get logged whole: util.inspect, JSON.stringify and pino's err serializer print every property and
 * every cause. So the HTTP layer passes each answer's text and headers through `text` as it reads them, parsed
 * JSON through `value`, and any error it did not build (fetch's, and their causes) through `error`.
 */
import { base64, base64url } from '../core/base64.js'

export const REDACTED = '[redacted]'

/** How deep `value` and `error` follow nested objects and causes; anything deeper is named, not copied. */
const MAX_DEPTH = 8

const jsonEscaped = (text: string): string => JSON.stringify(text).slice(1, -1)
const regexEscaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/** The names HTML gives ASCII characters: a browser, or any HTML decoder, shows `&sol;` as `/`. */
const HTML_NAMES: Readonly<Record<string, readonly string[]>> = {
  '!': ['excl'], '"': ['quot'], '#': ['num'], $: ['dollar'], '%': ['percnt'], '&': ['amp'], "'": ['apos'], '(': ['lpar'], ')': ['rpar'],
  '*': ['ast', 'midast'], '+': ['plus'], ',': ['comma'], '.': ['period'], '/': ['sol'], ':': ['colon'], ';': ['semi'], '<': ['lt'],
  '=': ['equals'], '>': ['gt'], '?': ['quest'], '@': ['commat'], '[': ['lsqb', 'lbrack'], '\\': ['bsol'], ']': ['rsqb', 'rbrack'],
  '^': ['Hat'], _: ['lowbar', 'UnderBar'], '`': ['grave', 'DiacriticalGrave'], '{': ['lcub', 'lbrace'], '|': ['verbar', 'vert', 'VerticalLine'],
  '}': ['rcub', 'rbrace'],
}

/**
 * A character as it may be written in a page and still read as itself: as is, or as a decimal, hex or named
 * character reference (leading zeros and a missing `;` are read too).
 */
function characterPattern(character: string): string {
  const code = character.codePointAt(0) ?? 0
  const names = (HTML_NAMES[character] ?? []).map((name) => `&${name};?`)
  return [regexEscaped(character), `&#0*${code};?`, `&#x0*${code.toString(16)};?`, ...names].join('|')
}

/**
 * What may come between two characters of a secret without a reader losing it: a page shows no tag, and a
 * log, an excerpt or a URL parser may drop a line break.
 */
const HIDDEN = '(?:<[^<>]*>|[\r\n])*'

/** A written form as a pattern that also finds it split by tags or line breaks, or written as character references. */
function formPattern(form: string): string {
  return [...form].map((character) => `(?:${characterPattern(character)})`).join(HIDDEN)
}

/**
 * Each way an echo may write a secret back: as it is, URL- and form-encoded, JSON-escaped (also as PHP writes
 * `/` and as Go and Rails write `<>&`); the Basic-auth header's base64 of uid:authToken in the same forms, and
 * base64url. HTML escapes, tags and line breaks inside are the patterns' part (formPattern). Parsed JSON is
 * redacted again after parsing (`value`), which no other escape survives.
 */
function writtenForms(secret: string): string[] {
  const json = jsonEscaped(secret)
  const htmlSafeJson = json.replace(/[<>&]/g, (character) => `\\u00${character.charCodeAt(0).toString(16)}`)
  return [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), json, json.replace(/\//g, '\\/'), htmlSafeJson]
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

export class Redactor {
  readonly #pattern: RegExp | undefined

  constructor(credentials: { readonly uid: string; readonly authToken: string; readonly checksumToken: string }) {
    const pair = `${credentials.uid}:${credentials.authToken}`
    const secrets = [credentials.authToken, credentials.checksumToken, base64(pair), base64url(pair)].filter((secret) => secret !== '')
    // Longest first, so a form that contains another (base64 with its padding) is replaced whole.
    const forms = [...new Set(secrets.flatMap(writtenForms))].sort((a, b) => b.length - a.length)
    // Case-insensitive: a hex Checksum Token echoed in capitals is the same secret.
    this.#pattern = forms.length === 0 ? undefined : new RegExp(forms.map(formPattern).join('|'), 'gi')
  }

  /** The text with every written form of a secret replaced by [redacted]. */
  text(text: string): string {
    return this.#pattern === undefined ? text : text.replace(this.#pattern, REDACTED)
  }

  /**
   * A copy of parsed JSON (or any plain data) with every string, keys included, passed through `text`. Objects
   * that are not plain data (a socket, a Headers, a Buffer) are named, not copied: their contents cannot be
   * checked.
   */
  value(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
    if (typeof value === 'string') return this.text(value)
    if (typeof value !== 'object' || value === null) return typeof value === 'function' || typeof value === 'symbol' ? undefined : value
    if (value instanceof Error) return this.error(value, depth, seen)
    if (seen.has(value)) return '[seen above]'
    if (depth >= MAX_DEPTH) return '[too deep]'
    seen.add(value)
    if (Array.isArray(value)) return value.map((item: unknown) => this.value(item, depth + 1, seen))
    if (!isPlainObject(value)) return Object.prototype.toString.call(value)
    const copy: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) copy[this.text(key)] = this.value(inner, depth + 1, seen)
    return copy
  }

  /**
   * A stand-in for an error the client did not build (fetch's, a fetch wrapper's, and their causes): an Error
   * with the same name, message, stack, own enumerable properties (such as `code`), `errors` and `cause`, each
   * redacted. The original is not kept, since it may hold the request (headers, body) somewhere no copy can see.
   */
  error(error: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
    if (!(error instanceof Error)) return this.value(error, depth, seen)
    if (seen.has(error)) return '[seen above]'
    if (depth >= MAX_DEPTH) return '[too deep]'
    seen.add(error)
    const cause = error.cause === undefined ? {} : { cause: this.error(error.cause, depth + 1, seen) }
    const copy = new Error(this.text(error.message), cause)
    Object.defineProperty(copy, 'name', { value: this.text(error.name), writable: true, configurable: true })
    Object.defineProperty(copy, 'stack', { value: this.text(String(error.stack)), writable: true, configurable: true })
    for (const [key, inner] of Object.entries(error)) if (key !== 'cause') Object.assign(copy, { [this.text(key)]: this.value(inner, depth + 1, seen) })
    const errors = (error as { errors?: unknown }).errors
    if (Array.isArray(errors)) Object.defineProperty(copy, 'errors', { value: this.value(errors, depth + 1, seen), writable: true, configurable: true })
    return copy
  }
}
