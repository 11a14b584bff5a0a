import { describe, expect, it } from 'vitest'
import { authorized, crossSite, NO_AUTHORIZE } from '../../src/console/guard.js'
import { handlerTrouble, lifeSteps } from '../../src/console/life.js'
import { html, Html, joinHtml } from '../../src/console/markup.js'
import { consoleSettings } from '../../src/console/options.js'
import type { TimelineEntry } from '../../src/contract/timeline.js'

describe('the html tag', () => {
  it('escapes every value and keeps its own markup', () => {
    const name = '<img src=x onerror=alert(1)>'
    expect(html`<td title="${name}">${name}</td>`.toString()).toBe(
      '<td title="&#60;img src=x onerror=alert(1)&#62;">&#60;img src=x onerror=alert(1)&#62;</td>',
    )
    expect(html`<p>${html`<b>${'"a" & \'b\''}</b>`}</p>`.toString()).toBe('<p><b>&#34;a&#34; &#38; &#39;b&#39;</b></p>')
    expect(html`${[1, '<', null, undefined, false, [html`<i></i>`]]}`.toString()).toBe('1&#60;<i></i>')
    expect(joinHtml(['<a>', html`<b></b>`], html`, `).toString()).toBe('&#60;a&#62;, <b></b>')
  })

  it('is the only maker of markup: no page can wrap outside text as Html', () => {
    expect(() => new Html(Symbol('markup'), '<script>')).toThrow(TypeError)
  })
})

describe('console options', () => {
  it('takes a path, an offset as text or minutes, and says what is wrong', () => {
    expect(consoleSettings({ basePath: '/admin/payments/', utcOffset: '+05:30' })).toMatchObject({ basePath: '/admin/payments', offsetMinutes: 330 })
    expect(consoleSettings({}).offsetMinutes).toBe(480)
    expect(() => consoleSettings({ basePath: 'admin' })).toThrow(/basePath must be empty or a path starting with \//)
    expect(() => consoleSettings({ utcOffset: 'Asia/Kuala_Lumpur' })).toThrow(/not a UTC offset/)
    expect(() => consoleSettings({ authorize: 'yes' as never })).toThrow(/authorize must be a function/)
  })
})

describe('the guard', () => {
  const settings = (authorize?: (request: Request) => unknown) => consoleSettings(authorize === undefined ? {} : { authorize: authorize as never })
  const request = new Request('http://shop.test/admin/payments/inbox/retry', { method: 'POST', headers: { host: 'shop.test' } })

  it('lets nobody in without authorize, and takes its answer as who is in', async () => {
    expect(await authorized(settings(), request)).toBe(NO_AUTHORIZE)
    expect(await authorized(settings(() => true), request)).toEqual({ operator: 'an operator' })
    expect(await authorized(settings(async () => 'Siti'), request)).toEqual({ operator: 'Siti' })
    expect(await authorized(settings(() => ({ name: 'Ravi' })), request)).toEqual({ operator: 'Ravi' })
    for (const no of [false, null, undefined, '', { name: '' }, 1]) expect(await authorized(settings(() => no), request)).toMatchObject({ status: 403 })
    expect(await authorized(settings(() => { throw new Error('session store down') }), request)).toMatchObject({ status: 500 })
  })

  it('takes a form only with the session’s token, from the console’s own origin', () => {
    const token = 'a'.repeat(43)
    const form = new URLSearchParams({ csrf: token })
    const headed = (headers: Record<string, string>) => new Request(request.url, { method: 'POST', headers: { host: 'shop.test', ...headers } })
    expect(crossSite(headed({ origin: 'http://shop.test', 'sec-fetch-site': 'same-origin' }), form, token)).toBeUndefined()
    expect(crossSite(headed({}), form, token)).toBeUndefined()
    expect(crossSite(headed({}), form, undefined)).toMatch(/token does not match/)
    expect(crossSite(headed({}), new URLSearchParams({ csrf: 'b'.repeat(43) }), token)).toMatch(/token does not match/)
    expect(crossSite(headed({ 'sec-fetch-site': 'same-site' }), form, token)).toMatch(/another site/)
    expect(crossSite(headed({ origin: 'http://evil.test' }), form, token)).toMatch(/Origin/)
    expect(crossSite(headed({ origin: 'null' }), form, token)).toMatch(/Origin/)
  })
})

describe('a timeline read as a life', () => {
  const entry = (event: TimelineEntry['event'], attempt: string, state: TimelineEntry['state'] = 'succeeded'): TimelineEntry => ({
    at: new Date(0),
    event,
    exchangeNumber: 'X1',
    orderNumber: 'O1',
    state,
    source: 'callback',
    attempt,
    verified: true,
    code: null,
    status: null,
    message: null,
  })

  it('groups the entries of one delivery, and tells a handler failing since its last success', () => {
    const failing = [entry('received', 'a'), entry('verified', 'a'), entry('handler_failed', 'a'), entry('handler_failed', 'b')]
    expect(lifeSteps(failing).map((step) => [step.entries.length, step.last.event])).toEqual([[3, 'handler_failed'], [1, 'handler_failed']])
    expect(handlerTrouble(failing)).toEqual({ failing: 'succeeded', failures: 2 })
    expect(handlerTrouble([...failing, entry('processed', 'c')])).toEqual({ failing: null, failures: 0 })
    // A failure of another state's handler is that state's trouble, not the success's.
    expect(handlerTrouble([entry('processed', 'a', 'pending'), entry('handler_failed', 'b', 'succeeded')])).toEqual({ failing: 'succeeded', failures: 1 })
  })
})
