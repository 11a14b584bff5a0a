import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isReceiverError, PAYMENT_FIELD_RULES, verifyDelivery } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { independentForm } from './independent-signer.js'

const TOKEN = 'ab'.repeat(32)
const SERVICE_NAMES = [...Object.keys(PAYMENT_FIELD_RULES), 'params[reference1]', 'shipping_address[city]']
/** The service's names, nested ones by the part before the bracket. */
const SERVICE_BASES = new Set([...Object.keys(PAYMENT_FIELD_RULES), 'params', 'shipping_address', 'billing_address'])
const isServiceName = (name: string) => SERVICE_BASES.has(name.split('[')[0] as string)

function genuine(): { fields: Record<string, string>; form: string } {
  const fields: Record<string, string> = {}
  for (const [name, value] of Object.entries(samplePaymentFields())) if (value !== undefined) fields[name] = String(value)
  return { fields, form: independentForm(fields, TOKEN) }
}

const encode = (text: string) => encodeURIComponent(text).replace(/%20/g, '+')

/** Leading parameters a forger (or a merchant) might put before the service's fields. */
const prefix = fc.array(
  fc.tuple(fc.oneof(fc.constantFrom(...SERVICE_NAMES), fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('shop', 'lang')), fc.string({ maxLength: 8 })),
  { minLength: 1, maxLength: 10 },
)

async function outcome(query: string) {
  try {
    return { verified: await verifyDelivery({ body: '', query }, { checksumToken: TOKEN }) }
  } catch (error) {
    if (!isReceiverError(error)) throw error
    return { error }
  }
}

describe('unsigned leading query parameters, whatever is put in front', () => {
  it('either refuse with 4xx, or accept exactly the signed fields and only non-service names as unsigned', async () => {
    const seen = { accepted: 0, refused: 0, withUnsigned: 0 }
    await fc.assert(
      fc.asyncProperty(prefix, async (pairs) => {
        const { fields, form } = genuine()
        const own = pairs.map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&')
        const result = await outcome(`${own}&${form}`)
        if (result.error !== undefined) {
          seen.refused++
          expect(result.error.status).toBeGreaterThanOrEqual(400)
          expect(result.error.status).toBeLessThan(500)
          return
        }
        const { verified } = result
        seen.accepted++
        if (Object.keys(verified.unsignedQuery).length > 0) seen.withUnsigned++
        expect({ ...verified.fields }).toEqual({ ...fields, checksum: new URLSearchParams(form).get('checksum') })
        for (const name of Object.keys(verified.unsignedQuery)) {
          expect(isServiceName(name)).toBe(false)
          expect(Object.hasOwn(fields, name)).toBe(false)
          expect(pairs.some(([given]) => given === name)).toBe(true)
        }
      }),
      // Names an ordinary object already has (CI once drew toString): always tried, never taken from a prototype.
      { numRuns: 150, examples: [[[['toString', '']]], [[['__proto__', 'x']]], [[['constructor', '1'], ['hasOwnProperty', '']]]] },
    )
    // Both branches ran: the property is not vacuous.
    expect(seen.accepted).toBeGreaterThan(0)
    expect(seen.withUnsigned).toBeGreaterThan(0)
    expect(seen.refused).toBeGreaterThan(0)
  })

  it('never accepts a changed signed value, whatever is put in front', async () => {
    const names = Object.keys(genuine().fields)
    await fc.assert(
      fc.asyncProperty(prefix, fc.constantFrom(...names), fc.string({ minLength: 1, maxLength: 6 }), async (pairs, target, extra) => {
        const { form } = genuine()
        const params = new URLSearchParams(form)
        params.set(target, `${params.get(target) ?? ''}${extra}`)
        const own = pairs.map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&')
        const result = await outcome(`${own}&${params.toString()}`)
        expect(result.error?.status).toBeGreaterThanOrEqual(400)
      }),
      { numRuns: 150 },
    )
  })
})
