/**
 * What the suite needs beyond node_modules, and the one way to run it without some of it. A green `npm test` must
 * mean the suite ran: a missing service, browser or server binary fails the files that need it, naming what is
 * missing and how to get it. FPX_SKIP=redis,postgres,browser,restart skips those tests on purpose instead, and
 * the run ends with a line saying what it did not test (docs/testing.md).
 */

export const REQUIREMENTS = {
  redis: {
    what: 'Redis',
    how:
      'start it (`redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`; ' +
      'Debian: `apt-get install redis-server`; `.ci/run` starts an installed one), or point REDIS_URL at one',
  },
  postgres: {
    what: 'PostgreSQL',
    how:
      'start it with trust auth for user postgres and a database `test` (Debian: `apt-get install postgresql`, ' +
      '`pg_ctlcluster <version> main start`, `createdb -U postgres test`; `.ci/run` starts an installed one), ' +
      'or point DATABASE_URL at one',
  },
  browser: {
    what: 'Chromium',
    how: 'install it (`apt-get install chromium`, which puts it at /usr/bin/chromium), or point CHROMIUM_PATH at one',
  },
  restart: {
    what: "the server binaries the soak's restart runs start privately (redis-server, pg_ctl, initdb)",
    how:
      'install them (`apt-get install redis-server postgresql`: pg_ctl and initdb are found on PATH or under ' +
      '/usr/lib/postgresql/<version>/bin)',
  },
} as const

export type Requirement = keyof typeof REQUIREMENTS

/** The requirements FPX_SKIP names. A name it does not know is an error: a typo must not run less than asked. */
export function skipsRequested(env: NodeJS.ProcessEnv = process.env): Set<Requirement> {
  const names = (env.FPX_SKIP ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
  const unknown = names.filter((name) => !(name in REQUIREMENTS))
  if (unknown.length > 0)
    throw new Error(`FPX_SKIP names ${unknown.map((name) => `"${name}"`).join(', ')}, which the suite does not know; it knows ${Object.keys(REQUIREMENTS).join(', ')}`)
  return new Set(names as Requirement[])
}

/** Whether FPX_SKIP asks to skip the tests needing `requirement` (said once per file on the console). */
export function skipping(requirement: Requirement, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!skipsRequested(env).has(requirement)) return false
  console.warn(`FPX_SKIP=${env.FPX_SKIP}: skipping the tests that need ${REQUIREMENTS[requirement].what}`)
  return true
}

/** The error for a missing requirement: what is missing, why, and how to get it or skip it. */
export function missing(requirement: Requirement, problem: string): Error {
  const { what, how } = REQUIREMENTS[requirement]
  return new Error(
    `${problem}. These tests need ${what}: ${how}; or skip them on purpose with FPX_SKIP=${requirement} (see docs/testing.md).`,
  )
}

/** The line that ends a run with FPX_SKIP set, or undefined without it. */
export function skipSummary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const skipped = [...skipsRequested(env)]
  if (skipped.length === 0) return undefined
  return `FPX_SKIP=${env.FPX_SKIP}: this run skipped every test that needs ${skipped.map((name) => REQUIREMENTS[name].what).join('; ')}. It does not show that those pass.`
}
