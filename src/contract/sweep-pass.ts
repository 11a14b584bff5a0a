/* The sweeper's latest pass (SweepLock.notePass) as the shared stores keep it: JSON text, times as epoch milliseconds. */
import type { SweepPassNote } from './payment-book.js'

/** The most failing orders a note keeps (the first ones): a pass with every lookup failing stays one small value. */
export const MAX_PASS_FAILURES = 100

type StoredPass = Omit<SweepPassNote, 'at' | 'nextAt'> & { at: number; nextAt: number | null }

export function passToJson(note: SweepPassNote): string {
  const failures = note.failures.slice(0, MAX_PASS_FAILURES).map(({ orderNumber, message }) => ({ orderNumber, message }))
  const stored: StoredPass = {
    at: note.at.getTime(),
    holder: note.holder,
    nextAt: note.nextAt?.getTime() ?? null,
    lookups: note.lookups,
    found: note.found,
    closed: note.closed,
    failures,
  }
  return JSON.stringify(stored)
}

export function passFromJson(text: string): SweepPassNote {
  const stored = JSON.parse(text) as StoredPass
  return { ...stored, at: new Date(stored.at), nextAt: stored.nextAt === null ? null : new Date(stored.nextAt) }
}
