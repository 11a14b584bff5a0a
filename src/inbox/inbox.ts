/*
 * Inbox mode: a verified result is written to the store's inbox and acknowledged at once; workers (in this
 * process by default, or in others with receiver.inbox.work()) take entries under a lease and run the handlers
 * through the store's usual claim, so the guarantees of a direct delivery hold unchanged: once per
 * (exchange_number, state), never a regression, transactional completion with the PostgreSQL store.
 */
import { randomId } from '../core/crypto.js'
import type { Logger } from '../core/logger.js'
import type { MatchedCredential } from '../core/result/credentials.js'
import { thrownMessage } from '../core/result/errors.js'
import { messageOf } from '../core/result/message.js'
import type { FieldInput } from '../core/values.js'
import { validated, type VerifiedPayment } from '../core/result/verified.js'
import { backoffDelay, type BackoffOptions, checkBackoff } from './backoff.js'
import type { Outcome, ResultSource } from '../contract/delivery-result.js'
import {
  errorText,
  type FailOutcome,
  type FailResult,
  type InboxItem,
  type InboxListQuery,
  type InboxQueue,
  type InboxRetryTarget,
  parseFields,
  type TakenEntry,
} from '../contract/inbox-queue.js'

export interface InboxOptions {
  /**
   * Run workers in this process (the default). `false`: this process only writes results to the inbox, and
   * workers run where receiver.inbox.work() is called (other processes sharing the store).
   */
  work?: boolean
  /** Attempts running at once per worker. Default 4. */
  concurrency?: number
  /** Attempts before an entry is dead-lettered. Default 30 (about 3.5 hours with the default backoff). */
  maxAttempts?: number
  backoff?: BackoffOptions
  /** How often an idle worker looks for due entries written by other processes. Default 1000 ms. */
  pollMs?: number
  /**
   * When an entry that had failed is handled at last, the cause (a database, an ERP) is probably fixed: every
   * entry waiting out a backoff is made due at once, instead of each waiting up to `backoff.maxMs`. Done at most
   * once per `backoff.maxMs` in each process, so an entry that fails for reasons of its own (a poison entry) is
   * tried at most one extra time per period. Default true.
   */
  resumeOnRecovery?: boolean
}

export interface InboxWorkOptions {
  concurrency?: number
  pollMs?: number
}

export interface InboxWorker {
  /** Stops taking entries and waits for the attempts under way (a lease at most; those left are logged). */
  stop(): Promise<void>
}

/** receiver.inbox: the workers, and what operators need (also on the command line: `fpx-collect inbox`). */
export interface ReceiverInbox {
  /** Starts a worker in this process; several processes may run workers on one inbox. */
  work(options?: InboxWorkOptions): InboxWorker
  /** Stops every worker this receiver started, waiting for their attempts under way (a lease at most). */
  stop(): Promise<void>
  /** Pending and dead-lettered entries, oldest first. */
  list(query?: InboxListQuery): Promise<InboxItem[]>
  /** The entries of one exchange_number, with their fields. */
  show(exchangeNumber: string): Promise<(InboxItem & { fields: Record<string, unknown> })[]>
  /** Makes entries due now: one, every state of an exchange_number, or every dead-lettered one. */
  retry(target: InboxRetryTarget): Promise<number>
  counts(): Promise<{ pending: number; dead: number }>
}

/** What an attempt's dispatch answered, as much of the receiver's response as the inbox reads. */
export interface AttemptAnswer {
  readonly outcome: Outcome
  readonly headers: Record<string, string>
  readonly error?: { code: string; message: string }
  /** What a handler threw, when one did. */
  readonly cause?: unknown
}

export interface InboxHost {
  leaseMs: number
  logger: Logger
  /** How long a worker waits for one store call: what a delivery waits. */
  storeWithinMs: number
  /** The receiver's bound on a call: `call`, or a rejection once `withinMs` has passed (from `who`). */
  answeredWithin<T>(call: Promise<T>, withinMs: number, who?: string): Promise<T>
  /** Claims, runs the handlers and completes, exactly as for a delivery. Never throws. */
  dispatch(verified: VerifiedPayment, source: ResultSource): Promise<AttemptAnswer>
  /** Told of every attempt's outcome, for the per-order timeline; `dead` when it was dead-lettered. Never throws. */
  attempted?(verified: VerifiedPayment, answer: AttemptAnswer, dead: boolean): void
}

/** The store side, for createReceiver: a store that can keep an inbox. */
export interface InboxCapable {
  openInbox?(): InboxQueue
}

const DONE = new Set(['processed', 'duplicate', 'stale'])
const BUSY_DELAY_MS = 1000

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!(Number.isInteger(value) && value > 0)) throw new TypeError(`inbox.${name} must be a positive integer`)
  return value
}

export interface AcceptingInbox extends ReceiverInbox {
  /** Writes a verified result; resolves once it is durable. */
  accept(verified: VerifiedPayment, source: ResultSource): Promise<void>
  /**
   * Starts this process's worker unless `work: false` (or one runs): at the receiver's first delivery, not when it
   * is made, which must start no timers.
   */
  start(): void
}

export function createInbox(store: InboxCapable, options: InboxOptions, host: InboxHost): AcceptingInbox {
  if (options === null || typeof options !== 'object') throw new TypeError('inbox must be an options object ({} for the defaults)')
  if (typeof store.openInbox !== 'function')
    throw new TypeError(
      'inbox mode needs a durable store: postgresStore() or redisStore(). The memory store keeps nothing across a ' +
        'restart, so an inbox in it would lose the results it acknowledged; without `inbox`, it answers after the handlers ran.',
    )
  const queue = store.openInbox()
  const maxAttempts = positive('maxAttempts', options.maxAttempts, 30)
  const backoff = checkBackoff(options.backoff)
  const defaults = { concurrency: positive('concurrency', options.concurrency, 4), pollMs: positive('pollMs', options.pollMs, 1000) }
  const { logger, leaseMs } = host
  // A store that never answers (a paused server) must not hold a worker: a take left unanswered stopped its loop for
  // good, a finish or fail its attempt's slot, and the results the inbox acknowledged were no longer handled here.
  const bounded = <T>(call: Promise<T>): Promise<T> => host.answeredWithin(call, host.storeWithinMs)
  const workers = new Set<{ stop(): Promise<void>; wake(): void }>()
  let workerPrefix: string | undefined
  let closed = false
  let takes = 0
  if (options.resumeOnRecovery !== undefined && typeof options.resumeOnRecovery !== 'boolean') throw new TypeError('inbox.resumeOnRecovery must be a boolean')
  const resumeOnRecovery = options.resumeOnRecovery !== false
  let resumedAt = -Infinity

  /** An entry that had failed was just handled: make every entry waiting out a backoff due now (see resumeOnRecovery). */
  function resume(): void {
    const now = Date.now()
    if (!resumeOnRecovery || now - resumedAt < backoff.maxMs) return
    resumedAt = now
    queue.hasten().then(
      (count) => {
        if (count === 0) return
        logger.info({ count }, 'an inbox entry that had failed was handled: the entries waiting out a backoff are due now')
        for (const worker of workers) worker.wake()
      },
      (error: unknown) => logger.warn({ err: error }, 'could not make the waiting inbox entries due; they run when their backoff ends'),
    )
  }

  function rebuild(entry: TakenEntry): VerifiedPayment {
    const fields = parseFields(entry.fields) as Record<string, FieldInput>
    const verified = validated(messageOf(fields), entry.rendering, 'the inbox entry')
    if (verified.state !== entry.state || verified.exchangeNumber !== entry.exchangeNumber)
      throw new Error(`the inbox entry's fields classify as ${verified.exchangeNumber}:${verified.state}, not as stored`)
    // The signer files the order under its credential set, as at once: without it a paid order's key would differ.
    const signer = signerOf(entry.signer)
    verified.signerUid = signer.signerUid
    verified.credential = signer.credential
    return verified
  }

  async function attempt(entry: TakenEntry): Promise<void> {
    const log = { exchangeNumber: entry.exchangeNumber, state: entry.state, delivery: entry.source, attempt: entry.attempts }
    let verified: VerifiedPayment
    try {
      verified = rebuild(entry)
    } catch (error) {
      const settled = await settle(entry, { error: `unreadable entry: ${(error as Error).message}`, delayMs: 0, dead: true })
      const next = settled === 'revived' ? 'it was delivered again meanwhile and is read again now' : 'dead-lettered'
      logger.error({ ...log, err: error }, `an inbox entry cannot be read back; ${next}`)
      return
    }
    const answer = await host.dispatch(verified, entry.source)
    if (DONE.has(answer.outcome)) {
      host.attempted?.(verified, answer, false)
      if (answer.outcome === 'processed' && entry.attempts > 1) resume()
      await bounded(queue.finish(entry)).catch((error: unknown) => {
        // The store recorded the state: the next attempt finds it a duplicate and removes the entry then.
        logger.error({ ...log, err: error }, 'the inbox entry was handled but could not be removed; it will be found a duplicate')
      })
      return
    }
    if (answer.outcome === 'busy') {
      host.attempted?.(verified, answer, false)
      const seconds = Number(answer.headers['retry-after'])
      await settle(entry, { error: 'busy: another delivery of this payment was being handled', delayMs: seconds > 0 ? seconds * 1000 : BUSY_DELAY_MS, dead: false, refund: true })
      return
    }
    const cause = answer.cause === undefined ? '' : `: ${thrownMessage(answer.cause)}`
    const error = `${answer.error?.code ?? answer.outcome}${cause}`
    const lastAttempt = answer.outcome === 'rejected' || entry.attempts >= maxAttempts
    const delayMs = lastAttempt ? 0 : backoffDelay(entry.attempts, backoff)
    // Told and logged once the queue has answered: a last attempt is not final when the result was delivered again
    // while it ran (the queue gives the entry back, 'revived').
    const settled = await settle(entry, { error, delayMs, dead: lastAttempt })
    // Dead only when the queue did it: not when it was revived, nor when this worker no longer held the entry (false)
    // or the store could not be told (undefined); then the entry is attempted again.
    const dead = lastAttempt && settled === true
    host.attempted?.(verified, answer, dead)
    if (dead) logger.error({ ...log, error }, `dead-lettered after ${entry.attempts} attempts; retry it with receiver.inbox.retry() or fpx-collect inbox retry`)
    else if (settled === 'revived') logger.warn({ ...log, error }, 'an inbox attempt failed with no attempts left, but the result was delivered again meanwhile: it runs again now')
    else if (settled === false) logger.warn({ ...log, error }, "an inbox attempt failed after this worker's lease ran out; the entry is attempted again")
    else logger.warn({ ...log, error, retryInMs: delayMs }, 'an inbox attempt failed; it will be retried')
  }

  /** Records a failed attempt: what fail() answered, or undefined when the store could not be told. */
  async function settle(entry: TakenEntry, outcome: FailOutcome): Promise<FailResult | undefined> {
    try {
      return await bounded(queue.fail(entry, { ...outcome, error: errorText(outcome.error) }))
    } catch (error) {
      // The lease runs out and the entry is taken again: the attempt counted, nothing is lost.
      logger.error({ exchangeNumber: entry.exchangeNumber, state: entry.state, err: error }, 'could not record a failed inbox attempt; the lease will expire')
      return undefined
    }
  }

  function work(settings: InboxWorkOptions = {}): InboxWorker {
    const concurrency = positive('concurrency', settings.concurrency, defaults.concurrency)
    const pollMs = positive('pollMs', settings.pollMs, defaults.pollMs)
    /** The attempts under way, and their entries (named in the log when stop() leaves them). */
    const running = new Map<Promise<void>, TakenEntry>()
    let stopped = false
    let wakeUp: (() => void) | undefined
    // A wake-up while the loop is busy taking entries is kept for the next pause, which then does not wait.
    let woken = false
    const wake = () => {
      woken = true
      wakeUp?.()
      wakeUp = undefined
    }
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        if (woken) return resolve()
        const timer = setTimeout(resolve, ms)
        ;(timer as { unref?: () => void }).unref?.()
        wakeUp = () => {
          clearTimeout(timer)
          resolve()
        }
      })

    async function loop(): Promise<void> {
      let ready = false
      while (!stopped) {
        woken = false
        const free = concurrency - running.size
        let taken: TakenEntry[] = []
        if (free > 0)
          try {
            if (!ready) await bounded(queue.ready())
            ready = true
            // A take answered after its bound leased its entries to nobody here: they come back when that lease ends.
            taken = await bounded(queue.take(`${(workerPrefix ??= randomId())}:${++takes}`, free, leaseMs))
          } catch (error) {
            logger.error({ err: error }, 'the inbox could not be read; trying again')
          }
        for (const entry of taken) {
          const run = attempt(entry)
            .catch((error: unknown) => logger.error({ err: error }, 'unexpected error in an inbox attempt'))
            .finally(() => {
              running.delete(run)
              wake()
            })
          running.set(run, entry)
        }
        // A full batch may mean more is due; otherwise wait for a slot, new work here, or the next poll.
        if (taken.length > 0 && taken.length === free) continue
        if (!stopped) await pause(pollMs)
      }
    }

    const looping = loop()
    const worker = {
      wake,
      async stop() {
        stopped = true
        wake()
        await looping
        // A lease at most: past it each entry under way is taken again (by another worker, or here after a restart),
        // so waiting longer keeps nothing safe, while a handler that never returns kept close() waiting for ever.
        try {
          await host.answeredWithin(Promise.all(running.keys()), leaseMs, 'the inbox attempts under way')
        } catch (error) {
          const left = [...running.values()].map((entry) => `${entry.exchangeNumber}:${entry.state}`)
          logger.error({ err: error, left }, `stopped with ${left.length} inbox attempt(s) still under way after a lease (a handler or the store not answering); their entries are attempted again once their lease runs out`)
        }
        workers.delete(worker)
      },
    }
    workers.add(worker)
    return { stop: () => worker.stop() }
  }

  const inbox: AcceptingInbox = {
    async accept(verified, source) {
      const entry = { exchangeNumber: verified.exchangeNumber, state: verified.state }
      const signer = JSON.stringify({ uid: verified.signerUid, credential: verified.credential })
      const queued = await queue.enqueue({ ...entry, source, orderNumber: verified.orderNumber, fields: JSON.stringify(verified.fields), rendering: verified.rendering, signer })
      // Present already (maybe a renamed copy's, dead-lettered): due again now, so that no copy keeps a genuine result
      // behind it. The entry stands for its (exchange_number, state); what it means is confirmed when it runs.
      if (queued === 'present') await queue.retry(entry)
      inbox.start()
      for (const worker of workers) worker.wake()
    },
    work,
    start() {
      if (options.work !== false && workers.size === 0 && !closed) work()
    },
    async stop() {
      closed = true
      await Promise.all([...workers].map((worker) => worker.stop()))
    },
    list: (query) => queue.list(query),
    show: (exchangeNumber) => queue.show(exchangeNumber),
    retry: async (target) => {
      const count = await queue.retry(target)
      for (const worker of workers) worker.wake()
      return count
    },
    counts: () => queue.counts(),
  }
  return inbox
}

/** receiver.inbox of a receiver made without `inbox`: every method says so. */
export function disabledInbox(): ReceiverInbox {
  const refuse = (): never => {
    throw new TypeError('this receiver was created without `inbox`; pass createReceiver({ store, inbox: {} }) to use inbox mode')
  }
  return { work: refuse, stop: async () => {}, list: refuse, show: refuse, retry: refuse, counts: refuse }
}

/**
 * Who signed an entry's result, read back (InboxEntry.signer). Nothing from an entry written before it was kept,
 * or one whose text is not what accept() writes.
 */
function signerOf(text: string | undefined): Pick<VerifiedPayment, 'signerUid' | 'credential'> {
  let value: { uid?: unknown; credential?: Partial<MatchedCredential> | null } | null
  try {
    value = text === undefined ? null : (JSON.parse(text) as typeof value)
  } catch {
    return { signerUid: undefined, credential: undefined }
  }
  const uid = typeof value?.uid === 'string' ? value.uid : undefined
  const credential = value?.credential
  const matched =
    typeof credential?.uid === 'string' && typeof credential.index === 'number' && (credential.by === 'uid' || credential.by === 'only' || credential.by === 'checksum')
      ? Object.freeze({ uid: credential.uid, index: credential.index, by: credential.by })
      : undefined
  return { signerUid: uid, credential: matched }
}
