const LUA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * A Lua table constructor holding `record`, such as `{ pending = 1, failed = 2, succeeded = 4 }`: how the scripts
 * get core's state tables (STATE_RANK, STATE_BIT) instead of keeping copies in step by hand.
 */
export function luaTable(record: Readonly<Record<string, number>>): string {
  const entries = Object.entries(record).map(([key, value]) => {
    if (!LUA_NAME.test(key) || !Number.isSafeInteger(value)) throw new TypeError(`no plain Lua table entry for ${key} = ${value}`)
    return `${key} = ${value}`
  })
  return `{ ${entries.join(', ')} }`
}
