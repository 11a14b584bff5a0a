import type { Check } from './round.js'

/**
 * What is known to fail on a runtime, and how: for each runtime and check, a part of the failure's text. A check
 * listed here must fail with that text (the harness then reports it as a known failure); one that starts to pass,
 * or fails another way, fails the run, so the list stays true. Empty since the receiver core runs on web-platform
 * primitives (issue 35): every runtime passes every check. FPX_RUNTIMES_KNOWN_FAILURES=ignore runs as if it were
 * empty.
 */
export const KNOWN_FAILURES: Record<string, Partial<Record<Check, string>>> = {}
