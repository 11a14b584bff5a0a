import type { SweepLock, SweepPassNote, SweepStatus } from '../../contract/payment-book.js'
import { passFromJson, passToJson } from '../../contract/sweep-pass.js'

/** In one process the lock only orders sweeps of this process: the fencing token still grows per holder. */
export class MemorySweepLock implements SweepLock {
  private holder: { owner: string; token: number; expiresAt: number } | undefined
  private lastToken = 0
  private lastPass: SweepPassNote | null = null

  /** The fence: the book takes a sweeper's writes only under this token or a newer one. */
  get newestToken(): number {
    return this.lastToken
  }

  async acquire(owner: string, ttlMs: number): Promise<{ readonly token: number } | undefined> {
    const now = Date.now()
    if (this.holder !== undefined && this.holder.expiresAt > now) return undefined
    this.holder = { owner, token: ++this.lastToken, expiresAt: now + ttlMs }
    return { token: this.holder.token }
  }

  async renew(owner: string, token: number, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    if (this.holder === undefined || this.holder.owner !== owner || this.holder.token !== token || this.holder.expiresAt <= now) return false
    this.holder = { owner, token, expiresAt: now + ttlMs }
    return true
  }

  async release(owner: string, token: number): Promise<void> {
    if (this.holder?.owner === owner && this.holder.token === token) this.holder = undefined
  }

  async notePass(note: SweepPassNote): Promise<void> {
    // Kept as the shared stores keep it: a copy, its failures bounded the same way.
    this.lastPass = passFromJson(passToJson(note))
  }

  async status(): Promise<SweepStatus> {
    const live = this.holder !== undefined && this.holder.expiresAt > Date.now() ? this.holder : undefined
    return { holder: live?.owner ?? null, heldUntil: live === undefined ? null : new Date(live.expiresAt), lastPass: this.lastPass }
  }
}
