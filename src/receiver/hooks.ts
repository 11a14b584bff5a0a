/*
 * onAny and onError, as @octokit/webhooks has them: onAny handlers run for every payment event, after the
 * event's own handlers; onError handlers are told (not awaited) when a handler threw, with an AggregateError
 * carrying the event. And a warning when a payment state arrives that no handler listens to.
 */
import type { Logger } from '../core/logger.js'
import type { PaymentEvent, PaymentEventName, PaymentHandler } from './receiver.js'

/** What onError handlers receive: the handler's error in `errors` (and as `cause`), and the event it failed on. */
export type PaymentHandlerError<TTransaction = undefined> = AggregateError & { readonly event: PaymentEvent<TTransaction> }

export type ErrorHandler<TTransaction = undefined> = (error: PaymentHandlerError<TTransaction>) => void | Promise<void>

function remover<T>(list: T[], item: T): () => void {
  return () => {
    const at = list.indexOf(item)
    if (at >= 0) list.splice(at, 1)
  }
}

export class Hooks<TTransaction> {
  private readonly any: PaymentHandler<TTransaction>[] = []
  private readonly errors: ErrorHandler<TTransaction>[] = []

  constructor(
    private readonly logger: Logger,
    private readonly onHandlerError?: (error: unknown) => void,
  ) {}

  onAny(handler: PaymentHandler<TTransaction>): () => void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function')
    this.any.push(handler)
    return remover(this.any, handler)
  }

  onError(handler: ErrorHandler<TTransaction>): () => void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function')
    this.errors.push(handler)
    return remover(this.errors, handler)
  }

  /**
   * The handlers to run for an event, own ones first, then onAny ones; a copy whenever it could change while
   * they run (a handler that removes itself must not make the next one skip). Warns when there are none: the
   * state is still recorded as handled, so nothing would ever act on it.
   */
  handlersFor(own: PaymentHandler<TTransaction>[], name: PaymentEventName, details: object): readonly PaymentHandler<TTransaction>[] {
    if (this.any.length === 0) {
      if (own.length === 0) this.unhandled(name, details)
      return own.length === 1 ? own : [...own]
    }
    return [...own, ...this.any]
  }

  private unhandled(name: PaymentEventName, details: object): void {
    this.logger.warn(
      details,
      `no handler is registered for ${name}; the payment was recorded as handled and will not be dispatched again. ` +
        `Register one with receiver.on('${name}', ...) or receiver.onAny(...)`,
    )
  }

  /** Tells the onError handlers, without waiting for them; their own failures are logged. */
  handlerFailed(error: unknown, event: PaymentEvent<TTransaction>): void {
    this.onHandlerError?.(error)
    if (this.errors.length === 0) return
    const message = error instanceof Error ? error.message : String(error)
    const aggregate = Object.assign(new AggregateError([error], message, { cause: error }), { event }) as PaymentHandlerError<TTransaction>
    for (const handler of [...this.errors]) {
      const complain = (failure: unknown) => this.logger.error({ err: failure }, 'an onError handler threw')
      try {
        const returned = handler(aggregate)
        if (returned instanceof Promise) returned.catch(complain)
      } catch (failure) {
        complain(failure)
      }
    }
  }
}
