/**
 * Hands out a Map's entries oldest first, each call resuming where the last one stopped: for a store at its cap,
 * which forgets its oldest entry for each new one. A new iteration of the map would step over every slot that
 * deletions at the front left and V8 has not compacted yet; at the cap that is thousands of slots, ~25 µs a new
 * entry (bench/memory-cap.ts), where resuming costs well under 1 µs.
 *
 * An entry passed over (one the caller may not forget yet) is offered again only once the walk has reached the end
 * of the map and started over; entries added or moved to the end meanwhile come after the ones already there.
 */
export class OldestFirst<K, V> {
  // Made at the first call, not before: a walk holds on to the table V8 replaced when the map grew, and each
  // replaced table to the next, until the walk moves on; one left idle below the cap made a payment cost 157 bytes
  // instead of 105.
  private walk: MapIterator<[K, V]> | undefined

  constructor(private readonly map: Map<K, V>) {}

  /** The next entry; after the newest, the oldest again. Undefined only when the map is empty. */
  next(): [K, V] | undefined {
    const step = this.walk?.next()
    if (step !== undefined && step.done !== true) return step.value
    this.walk = this.map.entries()
    const again = this.walk.next()
    return again.done === true ? undefined : again.value
  }

  /**
   * Lets go of the walk: the next call starts from the front. The stores call it from their periodic sweeps, so
   * that a walk no longer needed (the map fell below its cap) holds no replaced tables for long.
   */
  restart(): void {
    this.walk = undefined
  }
}
