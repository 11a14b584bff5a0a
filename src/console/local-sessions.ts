/*
 * How `fpx-collect console` lets one person in: it prints a link holding a one-time token; opening it turns the
 * token into a session cookie (HttpOnly, SameSite=Strict) for that browser and the link stops working. Anyone
 * else reaching the port (it listens on 127.0.0.1 only, but a machine may have other users) gets nothing.
 */
import { cookiesOf, randomToken } from './guard.js'
import { html } from './markup.js'
import type { Authorize } from './options.js'

export const SESSION_COOKIE = 'fpx_console_session'
export const LOGIN_PATH = '/login'

/** A session lasts this long after its link was opened. */
const SESSION_MS = 12 * 60 * 60 * 1000

export interface LocalSessions {
  /** The link's path and query, with the one-time token: printed once, never logged anywhere else. */
  readonly loginPath: string
  /** Answers the link (sets the cookie, sends the browser to the overview), or undefined for any other request. */
  login(request: Request): Response | undefined
  /** The console's authorize hook: a request with a live session cookie, as `operator`. */
  readonly authorize: Authorize
}

export function localSessions(operator: string): LocalSessions {
  let token: string | undefined = randomToken()
  const loginPath = `${LOGIN_PATH}?token=${token}`
  const sessions = new Map<string, number>()
  const page = (status: number, title: string, message: string) =>
    new Response(html`<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><p>${message}</p>`.toString(), {
      status,
      headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'", 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
    })
  return {
    loginPath,
    login(request) {
      const url = new URL(request.url)
      if (url.pathname !== LOGIN_PATH) return undefined
      const given = url.searchParams.get('token')
      if (token === undefined || given !== token)
        return page(403, 'Link used already', 'This one-time link was used already (or is wrong). Restart fpx-collect console for a new one.')
      token = undefined
      const session = randomToken()
      sessions.set(session, Date.now() + SESSION_MS)
      return new Response(null, {
        status: 303,
        headers: {
          location: '/',
          'set-cookie': `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MS / 1000}`,
          'cache-control': 'no-store',
          'referrer-policy': 'no-referrer',
        },
      })
    },
    authorize(request) {
      const session = cookiesOf(request).get(SESSION_COOKIE)
      const until = session === undefined ? undefined : sessions.get(session)
      if (until === undefined) return false
      if (until < Date.now()) {
        sessions.delete(session as string)
        return false
      }
      return operator
    },
  }
}
