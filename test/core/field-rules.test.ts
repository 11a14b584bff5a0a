import { describe, expect, it } from 'vitest'
import { choiceProblem, FIELD_RULES, readParams } from '../../src/core/request/field-rules.js'

/**
 * The payment request's field rules (core/request/field-rules.ts), read strictly (the emulator's strict mode) and
 * leniently (its default, and the client's). End to end: test/client/tolerant-service.test.ts checks that the client
 * and the emulator refuse the same inputs; test/emulator/tolerance.test.ts the warnings.
 */
describe('readParams', () => {
  const pairs: [string, string][] = [
    ['reference1_label', 'Delivery note'],
    ['reference1', 'Leave at the gate\nafter 6 pm'],
    ['selected_item', 'Blue mug'],
    ['reference19', 'x'.repeat(256)],
  ]

  it('keeps undocumented keys and control characters leniently, with one note each, and still limits lengths', () => {
    expect(readParams(pairs, 'lenient')).toEqual({
      problems: { reference19: 'must be at most 255 characters' },
      notes: [
        `params keys "selected_item", "reference19" are not reference1..reference18 or their _label (the spec's); kept and sent back as given`,
        'params[reference1] holds a control character; kept and signed as sent, but a browser posting the redirect sends a lone CR or LF as CR LF, ' +
          'so that redirect will not verify (the callback will)',
      ],
    })
  })

  it('refuses both strictly, naming each key', () => {
    expect(readParams(pairs, 'strict')).toEqual({
      problems: {
        reference1: 'must be one line of text without control characters',
        selected_item: 'params keys are reference1..reference18 and their _label',
        reference19: 'params keys are reference1..reference18 and their _label',
      },
      notes: [],
    })
  })

  it('refuses in either reading a key no form field name can carry', () => {
    for (const reading of ['strict', 'lenient'] as const)
      expect(Object.keys(readParams([['', 'x'], ['a]b', 'y'], ['reference01', 'z']], reading).problems)).toEqual(['', 'a]b'])
  })
})

describe('the single-field rules', () => {
  it('say what is wrong in the words both the client and the emulator use', () => {
    expect([FIELD_RULES.order_number('x'.repeat(51)), FIELD_RULES.buyer_name('Nur\tAisyah'), FIELD_RULES.order_number('')]).toEqual([
      'must be at most 50 characters',
      'must be one line of text without control characters',
      undefined,
    ])
    expect([FIELD_RULES.buyer_email(`${'x'.repeat(243)}@example.com`), FIELD_RULES.buyer_email('aisyah@')]).toEqual(['must be at most 254 characters', 'must be an e-mail address'])
    expect(['https://shop.example/cb', 'ftp://shop.example', '/cb'].map(FIELD_RULES.callback_url)).toEqual([undefined, 'must be an absolute http or https URL', 'must be an absolute http or https URL'])
    expect([FIELD_RULES.model('B2B1'), FIELD_RULES.model('B2B')]).toEqual([undefined, 'must be B2C or B2B1'])
    expect(choiceProblem('currency')).toBe('must be MYR or USD (the only conversion the service offers)')
  })
})
