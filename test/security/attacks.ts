/**
 * The attack classes of issue 34 (docs/security.md), each built from a genuine signed result by renaming only:
 * the values, and so the checksum, stay the genuine ones.
 */
import { formBody, indexOf, moved, type Pairs, renamed } from '../receiver/rearrange.js'
import type { Buyer, Genuine, Outcome } from './genuine.js'

export interface Attack {
  readonly name: string
  /** The payment the buyer makes, and how it ends. */
  readonly outcome: Outcome
  readonly buyer: (order: string) => Buyer
  /** Renamed copies of the genuine result (form bodies); at least one. */
  readonly copies: (genuine: Genuine) => string[]
}

function copy(genuine: Genuine, pairs: Pairs | undefined): string[] {
  return pairs === undefined ? [] : [formBody(pairs, genuine.checksum)]
}

/** The value of `from` moved under `target`, exchange_number kept where it stands when asked. */
function move(genuine: Genuine, from: string, target: string, keepExchange = true): string[] {
  const at = indexOf(genuine.pairs, from)
  const keep = new Map(keepExchange ? [[indexOf(genuine.pairs, 'exchange_number'), 'exchange_number']] : [])
  return copy(genuine, moved(genuine.pairs, at, target, keep))
}

/** Every copy that names `target` at another position with every other name made to fit, a bounded sweep. */
function sweep(genuine: Genuine, target: string): string[] {
  const bodies: string[] = []
  for (let at = 0; at < genuine.pairs.length; at++) {
    if (genuine.pairs[at]![0] === target) continue
    bodies.push(...copy(genuine, renamed(genuine.pairs, new Map([[at, target]]))))
  }
  return bodies
}

export const ATTACKS: readonly Attack[] = [
  {
    name: 'another order: fpx_name (the bank account name, the buyer’s) under order_number',
    outcome: 'approve',
    buyer: (order) => ({ buyer_name: order, transaction_amount: '1.00' }),
    copies: (genuine) => move(genuine, 'fpx_name', 'order_number'),
  },
  {
    name: 'another order: fpx_transaction_id under order_number',
    outcome: 'approve',
    buyer: () => ({ transaction_amount: '1.00' }),
    copies: (genuine) => move(genuine, 'fpx_transaction_id', 'order_number'),
  },
  {
    name: 'another order: payment_id under order_number',
    outcome: 'approve',
    buyer: () => ({ transaction_amount: '1.00' }),
    copies: (genuine) => move(genuine, 'payment_id', 'order_number'),
  },
  {
    name: 'a wrong amount: transaction_fee under transaction_amount',
    outcome: 'approve',
    buyer: () => ({ transaction_amount: '10.00' }),
    copies: (genuine) => move(genuine, 'transaction_fee', 'transaction_amount'),
  },
  {
    name: 'many payments from one: a buyer value under exchange_number',
    outcome: 'approve',
    buyer: () => ({ buyer_name: 'EXPLANTED0000001', buyer_email: 'explanted@example.com' }),
    copies: (genuine) => ['buyer_name', 'buyer_email', 'buyer_phone', 'client_ip', 'currency'].flatMap((from) => move(genuine, from, 'exchange_number', false)),
  },
  {
    name: 'another state: a B2B1 approval wait (99) with its code renamed away',
    outcome: 'pending',
    buyer: () => ({ model: 'B2B1', buyer_name: '00' }),
    copies: (genuine) => [...sweep(genuine, 'fpx_debit_auth_code'), ...copy(genuine, renamed(genuine.pairs, new Map([[indexOf(genuine.pairs, 'fpx_debit_auth_code'), 'fpx_debit_auth_codez']])))],
  },
  {
    name: 'another order and amount: every value under order_number and transaction_amount',
    outcome: 'approve',
    buyer: (order) => ({ buyer_name: order, buyer_phone: '+60100000000' }),
    copies: (genuine) => [...sweep(genuine, 'order_number'), ...sweep(genuine, 'transaction_amount')],
  },
]

/** Genuine results whose values merely look odd: a buyer's text that resembles the service's markers. */
export const ODD_BUT_GENUINE: readonly { readonly name: string; readonly outcome: Outcome; readonly buyer: Buyer }[] = [
  { name: 'a buyer name of payment_unsuccessful', outcome: 'approve', buyer: { buyer_name: 'payment_unsuccessful' } },
  { name: 'a buyer name of payment_pending', outcome: 'approve', buyer: { buyer_name: 'payment_pending' } },
  { name: 'a phone of payment_unsuccessful', outcome: 'approve', buyer: { buyer_phone: 'payment_unsuccessful' } },
  { name: 'a buyer e-mail holding a /v1/status/ address', outcome: 'approve', buyer: { buyer_email: 'x@example.com/v1/status/ABCDE1234567890' } },
  { name: 'a buyer name holding a /v1/receipt/ address', outcome: 'reject', buyer: { buyer_name: 'https://x.test/v1/receipt/ABCDE1234567890.pdf' } },
  { name: 'a buyer name holding a /v1/retry/ address', outcome: 'approve', buyer: { buyer_name: 'https://x.test/v1/retry/ABC?uid=1' } },
  { name: '00 as the buyer’s name in a B2B1 99 result', outcome: 'pending', buyer: { model: 'B2B1', buyer_name: '00' } },
  { name: 'markers inside a params value', outcome: 'approve', buyer: { params: { reference1_label: 'payment_unsuccessful', reference1: '/v1/status/ABCDE1234567890' } } },
  { name: 'a pipe in the buyer’s name', outcome: 'approve', buyer: { buyer_name: 'Ali | Abu' } },
]
