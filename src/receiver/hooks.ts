/*
 * onAny and onError, as @octokit/webhooks has them: onAny handlers run for every payment event, after the
 * event's own handlers; onError handlers are told (not awaited) when a handler threw, with an AggregateError
 * carrying the event. And a warning when a payment state arrives that no handler listens to.
 * Generic over the event, so that it does not import the receiver that uses it.
 */
import type { Logger } from '../core/logger.js'
import { thrownMessage } from '../core/result/errors.js'

/** What onError handlers receive: the handler's error in `errors` (and as `cause`), and the event it failed on. */
export type HandlerError<TEvent> = AggregateError & { readonly event: TEvent }

type Handler<TEvent> = (event: TEvent) => void | Promise<void>
type OnError<TEvent> = (error: HandlerError<TEvent>) => void | Promise<void>

function remover<T>(list: T[], item: T): () => void {
  return () => {
    const at = list.indexOf(item)
    if (at >= 0) list.splice(at, 1)
  }
}

export class Hooks<TEvent> {
  private readonly any: Handler<TEvent>[] = []
  private readonly errors: OnError<TEvent>[] = []

  constructor(
    private readonly logger: Logger,
    private readonly onHandlerError?: (error: unknown) => void,
  ) {}

  onAny(handler: Handler<TEvent>): () => void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function')
    this.any.push(handler)
    return remover(this.any, handler)
  }

  onError(handler: OnError<TEvent>): () => void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function')
    this.errors.push(handler)
    return remover(this.errors, handler)
  }

  /**
   * The handlers to run for an event, own ones first, then onAny ones; a copy whenever it could change while
   * they run (a handler that removes itself must not make the next one skip). Warns when there are none: the
   * receiver then leaves the state unrecorded (see unhandled.ts), so a handler registered later still gets it.
   * `subject.log`: the details of that warning.
   */
  handlersFor(own: Handler<TEvent>[], name: string, subject: { readonly log: object }): readonly Handler<TEvent>[] {
    if (this.any.length === 0) {
      // The log details are made only for the warning: a delivery with handlers makes none.
      if (own.length === 0) this.unhandled(name, subject.log)
      return own.length === 1 ? own : [...own]
    }
    return [...own, ...this.any]
  }

  private unhandled(name: string, details: object): void {
    this.logger.warn(
      details,
      `no handler is registered for ${name}; the result was NOT recorded as handled and the sender is asked to retry ` +
        `(503 no_handler). Register one with receiver.on('${name}', ...) or receiver.onAny(...)`,
    )
  }

  /** Tells the onError handlers, without waiting for them; their own failures are logged. */
  handlerFailed(error: unknown, event: TEvent): void {
    this.onHandlerError?.(error)
    if (this.errors.length === 0) return
    const message = thrownMessage(error)
    const aggregate = Object.assign(new AggregateError([error], message, { cause: error }), { event }) as HandlerError<TEvent>
    const complain = (failure: unknown) => this.logger.error({ err: failure }, 'an onError handler threw')
    for (const handler of [...this.errors]) {
      try {
        const returned = handler(aggregate)
        if (returned instanceof Promise) returned.catch(complain)
      } catch (failure) {
        complain(failure)
      }
    }
  }
}
