import type { ClientContext } from './context.js'
import { bankListSchema, readOutput } from './schemas.js'
import { FpxValidationError } from './errors.js'

export interface Bank {
  readonly code: string
  readonly name: string
  readonly online: boolean
}

export interface BankList {
  readonly model: string | undefined
  readonly mode: string | undefined
  readonly category: string | undefined
  /**
   * False when the service marked the list VerifySign false ("the data may be bogus"): `banks` is then empty,
   * because the spec says such data must be discarded.
   */
  readonly verified: boolean
  readonly banks: readonly Bank[]
}

export type BankStatus = 'online' | 'offline'

async function bankList(context: ClientContext, path: string, basicAuth: boolean, status: BankStatus | undefined): Promise<BankList> {
  if (status !== undefined && status !== 'online' && status !== 'offline')
    throw new FpxValidationError({ status: 'must be online or offline' }, { prefix: `GET ${path}: invalid input` })
  const what = `GET ${path}`
  const answer = await context.http.send({ method: 'GET', path, query: { status }, basicAuth, retry: true })
  const list = readOutput(bankListSchema, context.http.json(what, answer), what, answer.status)
  const logger = context.config.logger
  const verified = list.VerifySign === true
  if (!verified) logger.warn({ request: what, entries: list.fpx_bankList.length }, 'discarded a bank list whose VerifySign is not true')
  const banks: Bank[] = []
  if (verified)
    for (const entry of list.fpx_bankList) {
      // The spec puts VerifySign on the list; an entry that carries its own false is discarded just the same.
      if (entry.VerifySign === false) {
        logger.warn({ request: what, code: entry.code }, 'discarded a bank list entry whose VerifySign is false')
        continue
      }
      banks.push({ code: entry.code, name: entry.name, online: entry.status_format2 ?? entry.status_format1 === 'online' })
    }
  return { model: list.model, mode: list.mode, category: list.category, verified, banks }
}

/** GET /public/v1/banks/b2c or /b2b: no authentication. */
export async function publicBanks(context: ClientContext, model: 'b2c' | 'b2b', options: { status?: BankStatus } = {}): Promise<BankList> {
  if (model !== 'b2c' && model !== 'b2b') throw new FpxValidationError({ model: 'must be b2c or b2b' }, { prefix: 'publicBanks: invalid input' })
  return bankList(context, `/public/v1/banks/${model}`, false, options.status)
}

/** GET /v1/banks/b2c or /b2b1: partners only, with Basic auth. */
export async function partnerBanks(context: ClientContext, model: 'b2c' | 'b2b1', options: { status?: BankStatus } = {}): Promise<BankList> {
  if (model !== 'b2c' && model !== 'b2b1') throw new FpxValidationError({ model: 'must be b2c or b2b1' }, { prefix: 'partnerBanks: invalid input' })
  return bankList(context, `/v1/banks/${model}`, true, options.status)
}
