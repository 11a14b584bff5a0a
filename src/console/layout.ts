/*
 * The console's page shell: a bar with the pages and the search box, the page, and a footer saying whose view it
 * is and which offset its times are at. One style sheet, inline and allowed by its nonce; no script, no image,
 * nothing fetched from anywhere.
 */
import { htmlDocument } from '../core/html.js'
import { html, type Html } from './markup.js'
import type { View } from './view.js'

const STYLE = `*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1c2430;background:#f4f6f9}
header{background:#14324f;color:#fff;padding:.6rem 1.2rem;display:flex;flex-wrap:wrap;gap:.4rem 1.4rem;align-items:center}
header a{color:#fff;text-decoration:none;padding:.2rem .1rem;border-bottom:2px solid transparent}
header a.here{border-bottom-color:#f2a900}
header strong{margin-right:.6rem;letter-spacing:.02em}
header form{margin-left:auto;display:flex;gap:.3rem}
header input{width:18rem;max-width:50vw;padding:.3rem .5rem;border:0;border-radius:4px}
main{max-width:84rem;margin:0 auto;padding:1rem 1.2rem 2rem}
h1{font-size:1.35rem;margin:.6rem 0 .8rem}h2{font-size:1.05rem;margin:1.4rem 0 .5rem}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d8dee6}
th,td{text-align:left;padding:.35rem .55rem;border-bottom:1px solid #e6eaf0;vertical-align:top}
th{background:#eef2f6;font-weight:600;font-size:.85rem;color:#3c4a5c}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.group td{border-top:2px solid #d8dee6}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));gap:.7rem}
.card{background:#fff;border:1px solid #d8dee6;border-radius:6px;padding:.6rem .8rem}
.card .n{font-size:1.6rem;font-weight:650;font-variant-numeric:tabular-nums}
.card.urgent{border-color:#b42318;background:#fff4f2}.card.urgent .n{color:#b42318}
.card.warn{border-color:#b54708;background:#fffaeb}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:999px;font-size:.8rem;font-weight:600;background:#e4e7ec;color:#344054;white-space:nowrap}
.badge.succeeded{background:#dcfae6;color:#067647}.badge.failed{background:#fee4e2;color:#b42318}
.badge.open{background:#fef0c7;color:#93370d}.badge.abandoned{background:#e4e7ec;color:#475467}
.badge.failing{background:#b42318;color:#fff}.badge.pending{background:#d1e9ff;color:#175cd3}
.notice{background:#fff;border-left:4px solid #175cd3;padding:.5rem .8rem;margin:.6rem 0}
.notice.bad{border-left-color:#b42318;background:#fff4f2}.notice.good{border-left-color:#067647;background:#f0fdf4}
.split{display:grid;grid-template-columns:minmax(0,3fr) minmax(18rem,2fr);gap:1.2rem;margin-top:1rem}
details summary{cursor:pointer;color:#175cd3}
@media (max-width:60rem){.split{grid-template-columns:1fr}}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:#fff;border:1px solid #d8dee6;padding:.6rem .8rem;margin:0}
dt{color:#52606d}dd{margin:0;overflow-wrap:anywhere}
form.inline{display:inline}
button{font:inherit;padding:.25rem .7rem;border:1px solid #14324f;background:#14324f;color:#fff;border-radius:4px;cursor:pointer}
button.danger{background:#b42318;border-color:#b42318}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin:.4rem 0 .8rem}
.filters label{display:flex;flex-direction:column;font-size:.8rem;color:#52606d}
.filters input,.filters select{font:inherit;padding:.2rem .4rem}
.muted{color:#667085}.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
.claimed{color:#93370d}
footer{max-width:84rem;margin:0 auto;padding:0 1.2rem 2rem;color:#667085;font-size:.85rem}
svg text{font:11px system-ui,sans-serif;fill:#52606d}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .25rem 0 .8rem;vertical-align:middle}
.legend .s{background:#12b76a}.legend .f{background:#f04438}.legend .p{background:#2e90fa}`

export interface Page {
  readonly title: string
  readonly body: Html
  /** Which item of the bar is lit. */
  readonly section?: 'overview' | 'payments' | 'inbox' | 'refusals'
  readonly status?: number
}

const SECTIONS = [
  ['overview', '/', 'Overview'],
  ['payments', '/payments', 'Payments'],
  ['inbox', '/inbox', 'Dead letters'],
  ['refusals', '/refusals', 'Refusals'],
] as const

export function renderPage(appTitle: string, view: View | undefined, page: Page, nonce: string, search = ''): string {
  const bar =
    view === undefined
      ? html`<header><strong>${appTitle}</strong></header>`
      : html`<header><strong>${appTitle}</strong>${SECTIONS.map(
          ([section, path, label]) => html`<a href="${view.link(path)}"${page.section === section ? html` class="here" aria-current="page"` : ''}>${label}</a>`,
        )}<form method="get" action="${view.link('/payments')}" role="search"><input type="search" name="q" value="${search}" placeholder="Order number, exchange_number or buyer e-mail" aria-label="Search payments"><button type="submit">Search</button></form></header>`
  const footer =
    view === undefined ? html`` : html`<footer>Signed in as ${view.operator}. Times in ${view.zone}. Page made ${view.time(view.now)}.</footer>`
  const body = html`${bar}<main>${page.body}</main>${footer}`
  // The style sheet is the console's own constant (a raw-text element, where escapes would not be read back); the
  // nonce is base64url, which needs no escaping.
  return htmlDocument({ title: `${page.title} · ${appTitle}`, head: `<style nonce="${nonce}">\n${STYLE}\n</style>`, body: body.toString() })
}
