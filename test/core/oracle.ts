import { ReceiverError } from '../../src/index.js'

/**
 * Test helpers that stand apart from the code under test: byte order of names computed from their UTF-8 bytes,
 * and the ReceiverError a refused promise ended with.
 */
export function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

export async function rejectionOf(promise: Promise<unknown>): Promise<ReceiverError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof ReceiverError) return error
    throw error
  }
  throw new Error('expected the delivery to be refused')
}
