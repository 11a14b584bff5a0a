/**
 * Fault injection around a real store or client: one chosen method answers never (a paused server, a client with no
 * time-out) at its nth call; every other call goes to the real object.
 */

/** A promise that never settles. */
export const never = <T>(): Promise<T> => new Promise<T>(() => {})

export interface Stalling<T> {
  /** The wrapped object. */
  readonly object: T
  /** Calls of the chosen method so far. */
  readonly calls: () => number
}

/** `target` with its method `name` never answering at its `nth` call (1: the first) and after, up to `times` calls. */
export function stalling<T extends object>(target: T, name: string, nth = 1, times = 1): Stalling<T> {
  let calls = 0
  const object = new Proxy(target, {
    get(real, key) {
      const value = Reflect.get(real, key, real) as unknown
      if (typeof value !== 'function') return value
      const method = value as (...args: unknown[]) => unknown
      if (key !== name) return method.bind(real)
      return (...args: unknown[]) => {
        calls++
        if (calls >= nth && calls < nth + times) return never()
        return method.apply(real, args)
      }
    },
  })
  return { object, calls: () => calls }
}
