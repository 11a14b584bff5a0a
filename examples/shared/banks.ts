/** The checkout's bank list, read from the service with the client and kept for a while. */
import { FpxError, type FpxClient } from 'fpx-collect/client'
import type { BankChoice } from './pages.js'

/** Banks go offline for maintenance now and then: a minute-old list is fresh enough, one per page view is not needed. */
const FRESH_MS = 60_000

export interface BankCatalogue {
  /** The list, or why it is unavailable; never throws, so the checkout renders whatever the service does. */
  current(): Promise<BankChoice>
}

export function bankCatalogue(client: FpxClient, log: (line: string) => void): BankCatalogue {
  let cached: { banks: BankChoice; at: number } | undefined
  return {
    async current() {
      if (cached !== undefined && Date.now() - cached.at < FRESH_MS) return cached.banks
      try {
        const list = await client.publicBanks('b2c')
        // An unverified list comes back empty (the client drops it); the buyer then chooses at the bank page.
        const banks: BankChoice = list.verified ? { banks: list.banks } : { unavailable: 'the service could not vouch for it' }
        cached = { banks, at: Date.now() }
        return banks
      } catch (error) {
        // Not cached: the next page view tries again, e.g. once the emulator has been started.
        const reason = error instanceof FpxError ? error.message : String(error)
        log(`bank list unavailable: ${reason}`)
        return { unavailable: 'the payment service did not answer' }
      }
    },
  }
}
