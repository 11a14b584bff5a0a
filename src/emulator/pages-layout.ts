import { escapeHtml, htmlDocument } from '../core/html.js'

/**
 * The look of the hosted pages: the payment scheme's pages (bank selection, processing, status) under an FPX
 * bar, the simulated bank's pages under a bar in the bank's colour with its name as a wordmark. Identity is text
 * and colour only (no logos are copied), and every page says it is the emulator, so a screenshot of it cannot
 * be mistaken for a real bank's. One inline style sheet, no external resources: the pages work offline and
 * without scripts.
 */
const e = escapeHtml

/** The scheme's colours: a deep blue bar with an amber accent. */
const SCHEME = { colour: '#0b3a6e', ink: '#ffffff', accent: '#f2a900' } as const

/**
 * Colours by bank, chosen to be recognisable (Maybank's yellow, CIMB's red, ...), keyed by the start of the
 * FPX bank code; a bank not listed gets a steady colour computed from its code.
 */
const BANK_COLOURS: readonly (readonly [prefix: string, colour: string, ink: string])[] = [
  ['MB2U', '#ffc20e', '#1a1a1a'],
  ['MBB', '#ffc20e', '#1a1a1a'],
  ['BCBB', '#c3002f', '#ffffff'],
  ['PBB', '#d71920', '#ffffff'],
  ['RHB', '#0067b1', '#ffffff'],
  ['HLB', '#00205b', '#ffffff'],
  ['AMBB', '#e31837', '#ffffff'],
  ['BIMB', '#8a1538', '#ffffff'],
  ['ABMB', '#7b2c3b', '#ffffff'],
  ['ABB', '#004f9f', '#ffffff'],
  ['UOB', '#002e6e', '#ffffff'],
  ['TEST', '#4b5563', '#ffffff'],
]

export interface Brand {
  readonly colour: string
  readonly ink: string
}

export function bankBrand(code: string): Brand {
  const known = BANK_COLOURS.find(([prefix]) => code.startsWith(prefix))
  if (known !== undefined) return { colour: known[1], ink: known[2] }
  let hash = 0
  for (const character of code) hash = (hash * 31 + character.charCodeAt(0)) % 360
  return { colour: `hsl(${hash} 55% 32%)`, ink: '#ffffff' }
}

/**
 * Two to four letters standing for a bank on the selection grid: a leading abbreviation (RHB, CIMB), else the
 * initials of its first two words, else its first two letters.
 */
export function monogram(name: string): string {
  const abbreviation = /^([A-Z]{2,4})\b/.exec(name)?.[1]
  if (abbreviation !== undefined) return abbreviation
  const words = name.replace(/\(.*?\)/g, '').split(/\s+/).filter((word) => /^[A-Za-z]/.test(word))
  const letters = words.length >= 2 ? `${words[0]?.[0] ?? ''}${words[1]?.[0] ?? ''}` : name.replace(/[^A-Za-z0-9]/g, '').slice(0, 2)
  return letters.toUpperCase()
}

const STYLE = `*{box-sizing:border-box}
body{margin:0;background:#eef2f6;color:#1c2430;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;line-height:1.5}
.bar{background:var(--brand);color:var(--brand-ink);border-bottom:4px solid var(--accent)}
.bar-inner{max-width:36rem;margin:0 auto;padding:.85rem 1rem;display:flex;align-items:center;gap:.75rem}
.mark{font-weight:800;font-size:1.45rem;letter-spacing:.06em;line-height:1}
.mark-sub{font-size:.8rem;opacity:.9;line-height:1.2}
.test-badge{margin-left:auto;font-size:.68rem;font-weight:700;text-transform:uppercase;letter-spacing:.08em;border:1px solid currentColor;border-radius:999px;padding:.15rem .6rem;white-space:nowrap}
main{max-width:36rem;margin:1.5rem auto 2rem;padding:0 1rem}
.card{background:#fff;border:1px solid #dce3eb;border-radius:14px;padding:1.4rem 1.5rem;box-shadow:0 1px 3px rgba(16,24,40,.08)}
.card+.card{margin-top:1rem}
h1{font-size:1.35rem;margin:0 0 .75rem}
h2{font-size:1rem;margin:0 0 .5rem;color:#4a5563}
.steps{display:flex;gap:.35rem;list-style:none;padding:0;margin:0 0 1rem;font-size:.75rem;color:#6b7684}
.steps li{flex:1;border-top:4px solid #d3dae3;padding-top:.3rem}
.steps li.done{border-color:var(--brand)}
.steps li.current{border-color:var(--accent);color:#1c2430;font-weight:700}
.payee{display:flex;justify-content:space-between;align-items:baseline;gap:1rem;border-bottom:1px solid #e6ebf1;padding-bottom:.75rem;margin-bottom:.75rem}
.payee-name{font-weight:600}
.amount{font-size:1.6rem;font-weight:800;white-space:nowrap}
dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem;margin:0 0 1rem;font-size:.92rem}
dt{color:#5b6675}dd{margin:0;overflow-wrap:anywhere}
.btn{display:inline-flex;align-items:center;justify-content:center;gap:.4rem;min-height:2.75rem;padding:.55rem 1.25rem;border-radius:9px;border:1px solid transparent;font:inherit;font-weight:650;cursor:pointer;text-decoration:none}
.btn-primary{background:var(--brand);color:var(--brand-ink)}
.btn-primary:hover{filter:brightness(1.08)}
.btn-secondary{background:#fff;border-color:#c9d2dc;color:#1c2430}
.btn-secondary:hover{background:#f4f7fa}
.btn-danger{background:#fff;border-color:#e5484d;color:#b4232a}
.btn:disabled{opacity:.45;cursor:not-allowed}
.btn:focus-visible,.bank:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1rem}
.actions .btn{flex:1 1 10rem}
.bank-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.6rem;margin-bottom:.5rem}
.bank{display:flex;align-items:center;gap:.6rem;padding:.7rem .75rem;border:1px solid #d3dae3;border-left:6px solid var(--bank);border-radius:10px;background:#fff;color:#1c2430;font:inherit;font-size:.9rem;font-weight:600;text-align:left;cursor:pointer}
.bank:hover:not(:disabled){background:#f6f8fb;border-color:var(--bank)}
.bank:disabled{opacity:.5;cursor:not-allowed}
.monogram{flex:none;display:inline-grid;place-items:center;width:2.1rem;height:2.1rem;border-radius:50%;background:var(--bank);color:var(--bank-ink);font-size:.75rem;font-weight:800;letter-spacing:.02em}
.offline{display:block;font-size:.72rem;font-weight:500;color:#8a3b12}
label{display:block;font-weight:600;font-size:.9rem;margin:.75rem 0 .3rem}
input,select{width:100%;min-height:2.75rem;padding:.5rem .7rem;border:1px solid #b9c3ce;border-radius:8px;font:inherit;background:#fff}
.problem{display:block;color:#b4232a;font-size:.85rem;margin-top:.25rem}
.note{font-size:.85rem;color:#5b6675}
.notice{background:#fff8e6;border:1px solid #f3d27a;border-radius:10px;padding:.6rem .8rem;font-size:.88rem}
.outcome{font-weight:700}
.outcome-ok{color:#13795b}.outcome-bad{color:#b4232a}.outcome-wait{color:#8a5a00}
.spinner{width:2.6rem;height:2.6rem;border:4px solid #d3dae3;border-top-color:var(--brand);border-radius:50%;animation:spin 1s linear infinite;margin:.5rem auto 1rem}
@keyframes spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.spinner{animation:none}}
.center{text-align:center}
footer{max-width:36rem;margin:0 auto 2rem;padding:0 1rem;font-size:.75rem;color:#6b7684;text-align:center}`

/** The steps of a payment as the buyer goes through them; hosted pages mark where the buyer is. */
export const STEPS = ['Choose bank', 'Log in', 'Confirm', 'Processing'] as const
export type Step = 0 | 1 | 2 | 3

export function steps(current: Step): string {
  const items = STEPS.map((label, index) => {
    const state = index < current ? 'done' : index === current ? 'current' : 'todo'
    const aria = index === current ? ' aria-current="step"' : ''
    return `<li class="${state}"${aria}>${index + 1}. ${label}</li>`
  })
  return `<ol class="steps" aria-label="Payment steps">${items.join('')}</ol>`
}

interface Shell {
  readonly title: string
  readonly brand: Brand & { readonly accent: string }
  /** The wordmark and the line under it, as HTML. */
  readonly identity: string
  readonly body: string
}

function shell({ title, brand, identity, body }: Shell): string {
  return htmlDocument({
    title,
    style: STYLE,
    bodyAttributes: `style="--brand:${brand.colour};--brand-ink:${brand.ink};--accent:${brand.accent}"`,
    body: `<header class="bar"><div class="bar-inner">${identity}<span class="test-badge" title="fpx-collect emulator: no real bank, no real money">Emulator</span></div></header>
<main>
${body}
</main>
<footer>fpx-collect emulator of the online payment collection service. Not a real bank; no money moves.</footer>`,
  })
}


/** A page of the payment scheme (FPX) itself. */
export function schemePage(title: string, body: string): string {
  const identity = `<div><div class="mark" data-scheme="FPX">FPX</div><div class="mark-sub">Online Banking</div></div>`
  return shell({ title, brand: SCHEME, identity, body })
}

/** A page of the simulated bank: its name as a wordmark on its colour. */
export function bankPage(title: string, bank: { readonly code: string; readonly name: string }, subtitle: string, body: string): string {
  const brand = bankBrand(bank.code)
  const identity = `<div><div class="mark" data-bank="${e(bank.code)}">${e(bank.name)}</div><div class="mark-sub">${e(subtitle)}</div></div>`
  return shell({ title, brand: { ...brand, accent: SCHEME.accent }, identity, body })
}
