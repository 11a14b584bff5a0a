/**
 * A payment's record is one number: the states handled (three bits) and when it was last touched, in ticks since
 * the store was made. A number, not an object: an object (and the boxed timestamp it held) was ~50 bytes more
 * per payment kept for 30 days, and most of what the GC had to copy per delivery. A tick is a thousandth of the
 * retention, at least 1 ms and at most 1 s, so at the default retention the record stays a small integer for four
 * years of uptime (a larger one is as correct, only boxed), and a payment is kept at most one tick longer than
 * retentionMs, never shorter.
 */
export class RecordClock {
  private readonly origin = Date.now()
  private readonly tickMs: number

  constructor(private readonly retentionMs: number) {
    this.tickMs = Math.max(1, Math.min(1000, Math.floor(retentionMs / 1000)))
  }

  record(handled: number, now: number): number {
    return Math.floor((now - this.origin) / this.tickMs) * 8 + handled
  }

  sameTick(a: number, b: number): boolean {
    return Math.floor((a - this.origin) / this.tickMs) === Math.floor((b - this.origin) / this.tickMs)
  }

  /** When the record is past retention: retentionMs after it was touched, counting the whole tick it was touched in. */
  expiresAt(record: number): number {
    return this.origin + (Math.floor(record / 8) + 1) * this.tickMs + this.retentionMs
  }

  expired(record: number, now: number): boolean {
    return now >= this.expiresAt(record)
  }
}

// `& 7`, not `% 8`: a clock set back before the store was made gives negative ticks, whose remainder is negative.
export const handledOf = (record: number) => record & 7
