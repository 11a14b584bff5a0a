import type { Booking } from './booking.js'
import type { ResolvedConfig } from './config.js'
import type { HttpClient } from './http.js'

/** What every endpoint group needs: the settings and the HTTP layer that holds the credentials. */
export interface ClientContext {
  readonly config: ResolvedConfig
  readonly http: HttpClient
  /** Where created payments are recorded (the `book` option); `enabled` false without one. */
  readonly booking: Booking
}
