import { describe, expect, it } from 'vitest'
import { paymentFormHtml } from '../../src/client/index.js'

const ACTION = 'https://sandbox.example.test/api/v1/payments'

describe('paymentFormHtml', () => {
  it('writes every value as an escaped hidden input, nested params as name[key], and one script', () => {
    const html = paymentFormHtml({ action: `${ACTION}?a=1&b="2"`, method: 'POST', fields: { buyer_name: `"><script>x</script>&'`, params: { reference1: '<1>' } } })
    expect(html).toContain('<input type="hidden" name="buyer_name" value="&#34;&#62;&#60;script&#62;x&#60;/script&#62;&#38;&#39;">')
    expect(html).toContain('<input type="hidden" name="params[reference1]" value="&#60;1&#62;">')
    expect(html).toContain(`action="https://sandbox.example.test/api/v1/payments?a=1&#38;b=&#34;2&#34;"`)
    expect(html.match(/<script/g)).toHaveLength(1)
    expect(html).toMatch(/^<!doctype html>/)
    expect(html).toContain('<meta charset="utf-8">')
  })

  it('keeps line breaks as character references, so the parser does not fold CR LF', () => {
    expect(paymentFormHtml({ action: ACTION, fields: { note: 'a\r\nb' } })).toContain('value="a&#13;&#10;b"')
  })

  it('gives a fragment, a nonce, a button text, and no script when autoSubmit is false', () => {
    const fragment = paymentFormHtml({ action: ACTION, fields: {} }, { fragment: true, nonce: 'n"1', buttonText: 'Pay <now>' })
    expect(fragment).toMatch(/^<form /)
    expect(fragment).toContain('<script nonce="n&#34;1">')
    expect(fragment).toContain('<button type="submit">Pay &#60;now&#62;</button>')
    expect(paymentFormHtml({ action: ACTION, fields: {} }, { autoSubmit: false })).not.toContain('<script')
  })

  it('refuses an action that is not an absolute http(s) URL, another method, and values that are not text', () => {
    for (const action of ['javascript:alert(1)', 'data:text/html,x', '/v1/payments', ''])
      expect(() => paymentFormHtml({ action, fields: {} }), action).toThrow(/absolute http\(s\) URL/)
    expect(() => paymentFormHtml({ action: ACTION, method: 'GET' as never, fields: {} })).toThrow(/POST/)
    expect(() => paymentFormHtml({ action: ACTION, fields: { amount: 10 as never } })).toThrow(/field amount must be a string/)
    expect(() => paymentFormHtml({ action: ACTION, fields: { params: { reference1: 1 as never } } })).toThrow(/params\[reference1\]/)
    expect(() => paymentFormHtml(undefined as never)).toThrow(TypeError)
  })
})
