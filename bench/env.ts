/** Benchmark settings from the environment: unset or empty gives the default, anything else must be valid. */

export function envNumber(name: string, fallback: number, min: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!(Number.isFinite(value) && value >= min)) throw new Error(`${name} must be a number >= ${min}, not "${text}"`)
  return value
}

export function envInteger(name: string, fallback: number, min: number): number {
  const value = envNumber(name, fallback, min)
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer >= ${min}, not "${process.env[name]}"`)
  return value
}
