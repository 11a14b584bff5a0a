import { describe, expect, it } from 'vitest'
import { type Second, saturation } from '../../src/cli/rehearse-stats.js'

/** A calm second: the app answering in 5 ms, this process (emulator and load generator) with room to spare. */
function second(at: number, changes: Partial<Second> = {}): Second {
  return { at, answers: 60, p50: 5, p99: 20, errors: 0, unanswered: 0, storeErrors: 0, cpuPercent: 30, lagMs: 5, machinePercent: 60, emulatorP50: 2, ...changes }
}

const calm = [1, 2, 3].map((at) => second(at))

describe('rehearse: what gave way first', () => {
  it('nothing while the latency holds and every part has room, nor for one slow second of a busy machine', () => {
    expect(saturation([...calm, second(4, { p50: 9, p99: 40 })], true).culprit).toBe('nothing')
    expect(saturation([...calm, second(4, { p50: 240 }), second(5)], true).culprit).toBe('nothing')
  })

  it('the app, when its answers stay slow while this process is idle', () => {
    const verdict = saturation([...calm, second(4, { p50: 240, p99: 900 }), second(5, { p50: 300 }), second(6, { storeErrors: 3, errors: 3 })], true)
    expect(verdict).toMatchObject({ culprit: 'app', at: 4 })
    expect(verdict.why).toContain('p50 240 ms')
  })

  it('the app, when it stops answering', () => {
    expect(saturation([...calm, second(4, { unanswered: 7, errors: 7 })], true)).toMatchObject({ culprit: 'app', at: 4 })
  })

  it('the store, when the app says so (503 store_unavailable), even before its latency grows', () => {
    expect(saturation([...calm, second(4, { storeErrors: 2, errors: 2 }), second(5, { p50: 500 })], true)).toMatchObject({ culprit: 'store', at: 4 })
  })

  it('the emulator, when this process ran out of CPU or lagged as the answers slowed', () => {
    const twice = (changes: Partial<Second>) => [...calm, second(4, changes), second(5, changes)]
    expect(saturation(twice({ p50: 300, cpuPercent: 99 }), true)).toMatchObject({ culprit: 'emulator', at: 4 })
    expect(saturation(twice({ p50: 300, lagMs: 400 }), true)).toMatchObject({ culprit: 'emulator', at: 4 })
    // A separate emulator is judged by its API's answer times, not by this process.
    expect(saturation(twice({ p50: 300, emulatorP50: 180, cpuPercent: 99 }), false)).toMatchObject({ culprit: 'emulator', at: 4 })
    expect(saturation(twice({ p50: 300, cpuPercent: 99 }), false)).toMatchObject({ culprit: 'app', at: 4 })
  })

  it('a busy process alone, with the app still fast, is no verdict', () => {
    expect(saturation([...calm, second(4, { cpuPercent: 99 }), second(5, { cpuPercent: 99 })], true).culprit).toBe('nothing')
  })
})
