/**
 * Database drivers are optional peer dependencies: an app installs the one its store uses. A command that needs
 * one that is missing says which and how to install it (as the emulator does for fastify), instead of a
 * resolution error dressed up as a connection failure.
 */
export class MissingPackage extends Error {
  override readonly name = 'MissingPackage'
}

function isMissing(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String(message).includes(`'${name}'`)
}

/** `import(name)`, or a MissingPackage naming it, what it is needed for, and the command that installs it. */
export async function importOptional<T>(name: string, load: () => Promise<T>, neededFor: string, command: string): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (!isMissing(error, name)) throw error
    throw new MissingPackage(
      `${neededFor} needs the optional package ${name}, which is not installed: npm install ${name} (or npx -p fpx-collect -p ${name} fpx-collect ${command})`,
      { cause: error },
    )
  }
}
