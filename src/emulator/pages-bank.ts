import { escapeHtml } from '../core/html.js'
import type { Bank } from './config.js'
import { summary } from './pages.js'
import { bankPage, steps } from './pages-layout.js'
import type { PaymentRecord } from './state.js'

/**
 * The simulated bank's pages: log-in, then the tester picks the bank's answer; for B2B1 the corporate
 * authorizer's approval. Log-in takes any user ID and password: nothing is checked or kept, it is there so a
 * journey (and a screenshot test) has the step a buyer meets at a real bank.
 */
const e = escapeHtml

function kindOf(record: PaymentRecord): string {
  return record.model === 'B2B1' ? 'Corporate online banking' : 'Online banking'
}

/** The form a page posts to answer for the buyer; `cancel` answers 1C, as a buyer leaving at the bank does. */
function cancelForm(bank: Bank, authorizeAction: string): string {
  return `<form id="bank-leave" method="post" action="${e(authorizeAction)}" class="actions">
<input type="hidden" name="bank_code" value="${e(bank.code)}">
<button type="submit" name="outcome" value="cancel" class="btn btn-secondary">Cancel payment</button>
</form>`
}

export interface LoginPageOptions {
  readonly payee: string
  /** Where the log-in is posted. */
  readonly action: string
  /** Where a cancel is posted (the bank's answer 1C). */
  readonly authorizeAction: string
  /** The user ID typed before, shown again with `problem`. */
  readonly userId?: string
  readonly problem?: string
}

export function bankLoginPage(record: PaymentRecord, bank: Bank, options: LoginPageOptions): string {
  const problem = options.problem === undefined ? '' : `<span class="problem" role="alert" id="login-error">${e(options.problem)}</span>`
  const body = `${steps(1)}
<div class="card">
<h1>Log in</h1>
<p class="note">Simulated bank: any user ID and password log in; nothing is checked or kept.</p>
<form id="bank-login" method="post" action="${e(options.action)}">
<input type="hidden" name="bank_code" value="${e(bank.code)}">
<label for="user_id">User ID</label>
<input id="user_id" name="user_id" autocomplete="off" required value="${e(options.userId ?? '')}">
${problem}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="off" required>
<div class="actions"><button type="submit" class="btn btn-primary">Log in</button></div>
</form>
${cancelForm(bank, options.authorizeAction)}
</div>
<div class="card">${summary(record, options.payee)}</div>`
  return bankPage(`${bank.name}: log in`, bank, kindOf(record), body)
}

const OUTCOME_BUTTONS = [
  ['approve', 'Approve', 'btn-primary'],
  ['reject', 'Reject', 'btn-danger'],
  ['cancel', 'Cancel (buyer)', 'btn-secondary'],
] as const

/** The simulated bank after log-in: the payment to confirm, and the tester picks the bank's answer. */
export function simulatedBankPage(record: PaymentRecord, bank: Bank, payee: string, userId: string, action: string): string {
  const buttons = OUTCOME_BUTTONS.map(
    ([outcome, label, style]) => `<button type="submit" name="outcome" value="${outcome}" class="btn ${style}">${label}</button>`,
  )
  if (record.model === 'B2B1')
    buttons.push('<button type="submit" name="outcome" value="pending" class="btn btn-secondary">Submit for corporate approval (99)</button>')
  const who = userId === '' ? '' : `<p class="note">Logged in as <strong data-user-id>${e(userId)}</strong>.</p>`
  const body = `${steps(2)}
<div class="card">
<h1>Confirm payment</h1>
${who}
${summary(record, payee)}
<p class="note">Simulated bank: choose how the bank answers. Approve sends 00, Reject 51, Cancel 1C${record.model === 'B2B1' ? ', corporate approval 99 and later 00' : ''}.</p>
<form id="bank-answer" method="post" action="${e(action)}">
<input type="hidden" name="bank_code" value="${e(bank.code)}">
<div class="actions">
${buttons.join('\n')}
</div>
</form>
</div>`
  return bankPage(`${bank.name}: confirm payment`, bank, kindOf(record), body)
}

/** The corporate approver's page for a B2B1 payment pending approval (99), at the bank the buyer chose. */
export function approvalPage(record: PaymentRecord, payee: string, action: string): string {
  const bank = { code: record.bank?.bankCode ?? '', name: record.bank?.bankName ?? 'Corporate banking' }
  const body = `<div class="card">
<h1>Corporate approval</h1>
<p class="outcome outcome-wait">Payment pending the authorizer's approval (fpx_debit_auth_code 99).</p>
${summary(record, payee)}
<form id="approval" method="post" action="${e(action)}" class="actions">
<button type="submit" name="decision" value="approve" class="btn btn-primary">Approve</button>
<button type="submit" name="decision" value="reject" class="btn btn-danger">Reject</button>
</form>
</div>`
  return bankPage('Corporate approval', bank, 'Corporate online banking: authorizer', body)
}

/** The authorizer's decision is recorded; the merchant hears of it by callback. */
export function decisionPage(record: PaymentRecord, decision: 'approve' | 'reject'): string {
  const bank = { code: record.bank?.bankCode ?? '', name: record.bank?.bankName ?? 'Corporate banking' }
  const title = decision === 'approve' ? 'Approved' : 'Rejected'
  const text = `Payment ${record.exchangeNumber} ${decision === 'approve' ? 'approved (00)' : 'rejected'}; the merchant is told by callback.`
  const tone = decision === 'approve' ? 'ok' : 'bad'
  return bankPage(title, bank, 'Corporate online banking: authorizer', `<div class="card">\n<h1>${title}</h1>\n<p class="outcome outcome-${tone}">${e(text)}</p>\n</div>`)
}
