/**
 * Who may open the operator's console (fpxConsole) in the example shops: whoever opened the one-time sign-in link
 * the shop printed at start, by the session cookie it set. A real shop gates the console with its own staff
 * sign-in instead; the console only asks `authorize` who the request is from.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

const COOKIE = 'shop_operator'

export interface Operators {
  /** The sign-in link's path, with its one-time token: printed once at start. */
  readonly signInPath: string
  /** GET /admin/sign-in: a valid token sets the session cookie and goes to the console; anything else is refused. */
  signIn(request: IncomingMessage, response: ServerResponse): void
  /** The console's authorize hook: the operator's name for a signed-in request, else false. */
  authorize(request: Request): string | false
}

export function operators(consolePath: string, name = 'shop operator'): Operators {
  let token: string | undefined = randomBytes(24).toString('base64url')
  const sessions = new Set<string>()
  return {
    signInPath: `/admin/sign-in?token=${token}`,
    signIn(request, response) {
      const given = new URL(request.url ?? '/', 'http://shop').searchParams.get('token')
      if (token === undefined || given !== token) {
        response.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end('This sign-in link was used already; restart the shop for a new one.')
        return
      }
      token = undefined
      const session = randomBytes(24).toString('base64url')
      sessions.add(session)
      response.writeHead(303, { location: consolePath, 'set-cookie': `${COOKIE}=${session}; Path=/; HttpOnly; SameSite=Strict`, 'cache-control': 'no-store' }).end()
    },
    authorize(request) {
      const cookie = (request.headers.get('cookie') ?? '').split(';').map((pair) => pair.trim().split('='))
      const session = cookie.find(([key]) => key === COOKIE)?.[1]
      return session !== undefined && sessions.has(session) ? name : false
    },
  }
}
