import { describe, expect, it } from 'vitest'
import { OldestFirst } from '../../src/stores/memory/oldest-first.js'

describe('OldestFirst', () => {
  it('hands out nothing for an empty map, then the entries added since', () => {
    const map = new Map<string, number>()
    const oldest = new OldestFirst(map)
    expect(oldest.next()).toBeUndefined()
    map.set('a', 1)
    expect(oldest.next()).toEqual(['a', 1])
  })

  it('resumes after the entries it handed out, past those deleted, and starts over after the newest', () => {
    const map = new Map([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ])
    const oldest = new OldestFirst(map)
    expect(oldest.next()).toEqual(['a', 1])
    map.delete('a')
    map.delete('b')
    // Moved to the end: offered after the ones already there.
    map.delete('c')
    map.set('c', 4)
    map.set('d', 5)
    expect(oldest.next()).toEqual(['c', 4])
    expect(oldest.next()).toEqual(['d', 5])
    expect(oldest.next()).toEqual(['c', 4])
  })

  it('starts from the front again once told to restart', () => {
    const map = new Map([
      ['a', 1],
      ['b', 2],
    ])
    const oldest = new OldestFirst(map)
    expect(oldest.next()).toEqual(['a', 1])
    oldest.restart()
    expect(oldest.next()).toEqual(['a', 1])
    expect(oldest.next()).toEqual(['b', 2])
  })

  it('keeps its place through the compaction of a large map', () => {
    const map = new Map<number, number>()
    for (let i = 0; i < 10_000; i++) map.set(i, i)
    const oldest = new OldestFirst(map)
    // Forgetting the oldest for each new one, as a store at its cap does, many times over the table's size.
    for (let i = 10_000; i < 60_000; i++) {
      const [key] = oldest.next() as [number, number]
      expect(key).toBe(i - 10_000)
      map.delete(key)
      map.set(i, i)
    }
    expect(map.size).toBe(10_000)
  })
})
