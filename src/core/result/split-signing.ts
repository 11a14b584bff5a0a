import type { CandidateKey, KeyMatch } from './credentials.js'
import { signedValueStarts } from './form.js'
import { hexDigestsEqual, hmacSha256HexOfRanges } from '../hmac.js'
import type { Message, SignedText } from './message.js'

/**
 * The HMACs of a query's splits (unsigned-query.ts) read out of the whole message's signed bytes, which the plain
 * check already wrote, instead of each split writing its own signed string again.
 *
 * A split that leaves the first `skip` fields of a flat message unsigned signs the same values in the same order
 * as the whole message, less those: its signed string is the whole one with each left-out value and one `|` next
 * to it cut out, so a few ranges of the whole's bytes, found from where each value starts (FormFields.signedBytes
 * records that). Each split's HMAC is then one copy of those ranges behind the key's inner pad and one hash: a
 * forged query, which pays for every split, costs the whole message's signing and three hashes.
 *
 * Not done: hashing the beginning the splits share once and copying the hash state per split (createHash and
 * Hash#copy). The splits share nothing when the URL's own names sort first, as a forger may choose; and where they
 * sort late (`shop`, `lang`) the hash objects cost more than the hashing they saved, even at 15.6 KB
 * (docs/benchmarks.md).
 */
export class SplitSigner {
  /** Per skip, its signed string as [from, to) ranges of the whole's signed bytes. */
  private readonly ranges = new Map<number, readonly number[]>()

  /**
   * @param signed the whole message's signed bytes, as signedBytes returned them last
   * @param starts where each value starts in them, by signed rank (signedValueStarts), read here and not kept
   * @param signedOrder the whole message's signed order: received positions by rank
   * @param skips how many leading fields each split leaves out
   */
  constructor(
    private readonly signed: Buffer,
    starts: Int32Array,
    signedOrder: readonly number[],
    skips: readonly number[],
  ) {
    // The ranks of the fields any split leaves out, in rank order: one pass over the signed order for all splits.
    const most = Math.max(...skips)
    const leftOut: number[] = []
    for (let rank = 0; rank < signedOrder.length; rank++) if ((signedOrder[rank] as number) < most) leftOut.push(rank)
    for (const skip of skips) {
      const ranks = leftOut.filter((rank) => (signedOrder[rank] as number) < skip)
      this.ranges.set(skip, keptRanges(ranks, starts, signedOrder.length, signed.length))
    }
  }

  /**
   * Whether the whole's signed bytes are still as they were: signedBytes writes every message's signed string into
   * one reused buffer, and a later call (another message signed) would change them under the ranges.
   */
  get current(): boolean {
    return signedValueStarts(this.signed) !== undefined
  }

  /** HMAC-SHA256, as lowercase hex, of the signed string of the split that leaves out `skip` leading fields. */
  hmacHex(token: string, skip: number): string {
    const ranges = this.ranges.get(skip)
    if (ranges === undefined) throw new Error(`no split leaving out ${skip} fields was planned`)
    return hmacSha256HexOfRanges(token, this.signed, ranges)
  }

  /** The first key whose HMAC of the split's signed string is the checksum (compared in constant time). */
  match(skip: number, checksum: string, keys: readonly CandidateKey[]): KeyMatch | undefined {
    for (const key of keys) if (hexDigestsEqual(this.hmacHex(key.token, skip), checksum)) return { rendering: 'plain', credential: key.credential }
    return undefined
  }
}

/**
 * A SplitSigner for the splits that are views of the whole message (`skips`), when the plain check's signed string
 * (`texts`) is the flat message's bytes with its value starts still at hand; otherwise undefined, and each split is
 * signed on its own.
 */
export function splitSigner(whole: Message, texts: readonly SignedText[] | undefined, skips: readonly number[]): SplitSigner | undefined {
  if (skips.length === 0 || texts?.length !== 1 || whole.hasNestedValues) return undefined
  const { rendering, data } = texts[0] as SignedText
  if (rendering !== 'plain' || typeof data === 'string') return undefined
  const starts = signedValueStarts(data)
  return starts === undefined ? undefined : new SplitSigner(data, starts, whole.shape.signedOrder, skips)
}

/**
 * The signed string of `count` values without those at `leftOut` (ranks, ascending), as ranges of the whole's
 * `length` signed bytes: runs of kept values, every run after the first with the `|` before it.
 */
export function keptRanges(leftOut: readonly number[], starts: Int32Array, count: number, length: number): number[] {
  const ranges: number[] = []
  let from = 0
  for (let i = 0; i <= leftOut.length; i++) {
    const rank = i < leftOut.length ? (leftOut[i] as number) : count
    // Ranks from..rank-1 are kept; `rank` is left out, or the end.
    if (rank > from) ranges.push(ranges.length === 0 ? (starts[from] as number) : (starts[from] as number) - 1, rank < count ? (starts[rank] as number) - 1 : length)
    from = rank + 1
  }
  return ranges
}
