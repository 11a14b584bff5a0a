/**
 * A store's one-time step (creating a missing table, inspecting the server), run on first use rather than when the
 * store is made: concurrent callers share the attempt under way and a success is kept for good, while a failure is
 * forgotten, so that the next call tries again (a database that was down at start-up must not leave the store
 * failing for good).
 */
export function once<T>(step: () => Promise<T>): () => Promise<T> {
  let attempt: Promise<T> | undefined
  return () => {
    if (attempt !== undefined) return attempt
    const current = step()
    attempt = current
    current.catch(() => {
      if (attempt === current) attempt = undefined
    })
    return current
  }
}
