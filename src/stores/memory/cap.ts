/**
 * How many entries a capped map of the memory store forgets at once when it reaches its cap: 1 % of the cap. A
 * `Map` keeps a deleted entry's slot until its table is rebuilt, so a walk from its front after forgetting one at a
 * time steps over every slot forgotten before; forgetting a batch in one walk pays for that walk once per batch,
 * and a full store stays about as quick as one with room (`npm run bench:memory-cap`).
 */
export function forgetBatch(maxEntries: number): number {
  return Math.max(1, Math.floor(maxEntries / 100))
}

/** Forgets the first `count` keys of `map` that `mayForget` allows (all, when it is not given), in one walk. */
export function forgetOldest<K, V>(map: Map<K, V>, count: number, mayForget: (key: K, value: V) => boolean = () => true): void {
  let left = count
  for (const [key, value] of map) {
    if (left === 0) return
    if (!mayForget(key, value)) continue
    map.delete(key)
    left--
  }
}
