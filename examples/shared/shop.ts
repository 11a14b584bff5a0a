/**
 * The merchant side every example shares, so each framework's app.ts shows only how it mounts fpx-collect:
 * configuration, an in-memory order book kept up to date by the receiver's handlers, the payment request a
 * checkout sends to the service, and the pages.
 */
import { randomBytes } from 'node:crypto'
import { createReceiver, type Logger, type PaymentEvent, type Receiver, type RedirectOptions, toSen } from 'fpx-collect'
import { createClient, type FpxClient } from 'fpx-collect/client'
import { bankCatalogue } from './banks.js'
import { type CheckoutValues, type Page, checkoutPage, orderPage, ordersPage } from './pages.js'
import { PAYMENT_CREATIONS, type PaymentCreation, startPayment } from './payment.js'

export interface ShopConfig {
  /** The service's {base_url}, ending in /api. */
  baseUrl: string
  /** API UID, Auth Token and Checksum Token from the dashboard. */
  uid: string
  authToken: string
  checksumToken: string
  /** Where the service and the buyer's browser reach this app; by default the address it listens on. */
  publicUrl?: string
  /**
   * How a checkout creates the payment (shared/payment.ts): 'server' keeps the Auth Token on the server, as
   * production must. Default 'browser-form', which puts it in the buyer's page: the demo and the tests drive the
   * shops by posting that form, and add the service's unsigned display options to it on the way.
   */
  paymentCreation?: PaymentCreation
}

/**
 * Made-up credentials, so that the examples and the demo run with nothing configured: for local use with the
 * emulator of the service, never valid on the sandbox or in production.
 */
export const DEMO_CONFIG: Readonly<ShopConfig> = {
  baseUrl: 'http://127.0.0.1:4010/api',
  uid: '0c0ffee0-d3e0-4a11-8f00-00000000d3e0',
  authToken: 'DemoAuthToken0000000',
  checksumToken: '0123456789abcdef'.repeat(4),
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ShopConfig {
  const config: ShopConfig = {
    baseUrl: (env.FPX_BASE_URL || DEMO_CONFIG.baseUrl).replace(/\/+$/, ''),
    uid: env.FPX_UID || DEMO_CONFIG.uid,
    authToken: env.FPX_AUTH_TOKEN || DEMO_CONFIG.authToken,
    checksumToken: env.FPX_CHECKSUM_TOKEN || DEMO_CONFIG.checksumToken,
  }
  if (env.PUBLIC_URL) config.publicUrl = env.PUBLIC_URL.replace(/\/+$/, '')
  const creation = env.FPX_PAYMENT_CREATION
  if (creation) {
    if (!PAYMENT_CREATIONS.includes(creation as PaymentCreation)) throw new RangeError(`FPX_PAYMENT_CREATION must be ${PAYMENT_CREATIONS.join(' or ')}`)
    config.paymentCreation = creation as PaymentCreation
  }
  return config
}

export type OrderState = 'awaiting payment' | 'awaiting approval' | 'paid' | 'failed' | 'needs review'

export interface Order {
  readonly orderNumber: string
  readonly product: string
  /** Two fraction digits, as sent in transaction_amount. */
  readonly amount: string
  readonly buyer: { readonly name: string; readonly email: string; readonly phone: string }
  readonly createdAt: Date
  state: OrderState
  /** The bank's answer or why the order needs a person to look at it. */
  note: string | null
  exchangeNumber: string | null
}

export class OrderBook {
  readonly #orders = new Map<string, Order>()

  add(order: Order): void {
    this.#orders.set(order.orderNumber, order)
  }

  get(orderNumber: string): Order | undefined {
    return this.#orders.get(orderNumber)
  }

  /** Newest first. */
  list(): Order[] {
    return [...this.#orders.values()].reverse()
  }
}

/** One line per thing worth knowing; the demo passes its own to control the output. */
export type ShopLog = (line: string) => void

export interface StartOptions {
  /** Default 0: any free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Default: configFromEnv(), which falls back to DEMO_CONFIG. */
  config?: ShopConfig
  log?: ShopLog
  /**
   * How often the Express example reconciles against the transactions list; 0 turns it off. Default: the
   * FPX_RECONCILE_EVERY_MS environment variable, else 15 minutes.
   */
  reconcileEveryMs?: number
}

export interface RunningShop {
  url: string
  orders: OrderBook
  /** The operator's console's one-time sign-in link, where the app mounts the console (the Express shop does). */
  consoleLink?: string
  close(): Promise<void>
}

export interface Shop {
  readonly log: ShopLog
  readonly receiver: Receiver
  readonly orders: OrderBook
  /** The service's API: the bank list, the payment form, reconciliation. */
  readonly client: FpxClient
  /** fpxRedirect's options: the buyer lands on the order's own page whatever happened. */
  readonly redirect: Pick<RedirectOptions, 'successUrl' | 'failureUrl' | 'pendingUrl'>
  checkoutPage(): Promise<Page>
  /** The checkout form's POST: records the order and answers with the page that takes the buyer to the service. */
  placeOrder(form: unknown): Promise<Page>
  ordersPage(): Page
  orderPage(orderNumber: string): Page
}

const ringgit = (sen: number): string => `RM ${(sen / 100).toFixed(2)}`

function wireHandlers(receiver: Receiver, orders: OrderBook, log: ShopLog): void {
  const find = (event: PaymentEvent): Order | undefined => {
    const order = orders.get(event.payment.orderNumber)
    // Acknowledged all the same: a redelivery would not make the order appear.
    if (order === undefined) log(`${event.name} for unknown order ${event.payment.orderNumber}: ignored`)
    return order
  }
  const via = (event: PaymentEvent) => `(${event.delivery}${event.previousState === null ? '' : `, was ${event.previousState}`})`

  receiver.on('payment.succeeded', (event) => {
    const order = find(event)
    if (order === undefined) return
    const { payment } = event
    order.exchangeNumber = payment.exchangeNumber
    // The checksum proves the service sent this, not that the buyer paid what the order costs.
    // A minimal redirect may carry no amount; the order's own (signed into the request) then stands.
    if (payment.amountSen !== undefined && payment.amountSen !== toSen(order.amount)) {
      order.state = 'needs review'
      order.note = `paid ${ringgit(payment.amountSen)}, expected RM ${order.amount}`
      log(`order ${order.orderNumber} NEEDS REVIEW: ${order.note} ${via(event)}`)
      return
    }
    order.state = 'paid'
    order.note = payment.fpx.bank === null ? null : `paid through ${payment.fpx.bank}`
    log(`order ${order.orderNumber} paid ${ringgit(payment.amountSen ?? toSen(order.amount))} ${via(event)}`)
  })

  receiver.on('payment.failed', (event) => {
    const order = find(event)
    if (order === undefined) return
    const { payment } = event
    // Another attempt for the same order (a second tab) may have failed after this one was paid.
    if (order.state === 'paid') {
      log(`order ${order.orderNumber}: a failed attempt after payment, order stays paid ${via(event)}`)
      return
    }
    order.state = 'failed'
    order.exchangeNumber = payment.exchangeNumber
    order.note = [payment.failureCode, payment.failureMessage].filter((part) => part !== null).join(' ') || null
    log(`order ${order.orderNumber} failed, bank code ${payment.failureCode ?? 'none'} ${via(event)}`)
  })

  receiver.on('payment.pending', (event) => {
    const order = find(event)
    if (order === undefined || order.state === 'paid') return
    order.state = 'awaiting approval'
    order.exchangeNumber = event.payment.exchangeNumber
    order.note = 'the corporate account must approve the payment (code 99)'
    log(`order ${order.orderNumber} awaits corporate approval ${via(event)}`)
  })
}

function text(form: unknown, name: keyof CheckoutValues): string {
  const value = typeof form === 'object' && form !== null ? (form as Record<string, unknown>)[name] : undefined
  return typeof value === 'string' ? value.trim() : ''
}

/** The problems with a checkout form, by field; the spec's rules for the payment request where it has any. */
function validate(input: CheckoutValues): Partial<Record<keyof CheckoutValues, string>> {
  const problems: Partial<Record<keyof CheckoutValues, string>> = {}
  // eslint-disable-next-line no-control-regex
  const oneLine = (value: string, max: number) => value !== '' && value.length <= max && !/[\u0000-\u001f\u007f]/.test(value)
  if (!oneLine(input.name, 100)) problems.name = 'Enter the full name on one line.'
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(input.email) || input.email.length > 254) problems.email = 'Enter an e-mail address.'
  if (!/^\+\d{7,15}$/.test(input.phone)) problems.phone = 'Enter the number in international format, e.g. +60123456789.'
  if (!/^\d{1,7}(\.\d{1,2})?$/.test(input.amount) || toSen(input.amount) === 0) problems.amount = 'Enter an amount such as 100.20.'
  if (!oneLine(input.product, 200)) problems.product = 'Describe what is being paid for.'
  return problems
}

function newOrderNumber(): string {
  return `ORD-${randomBytes(5).toString('hex').toUpperCase()}`
}

export function createShop(options: StartOptions, listeningUrl: () => string): Shop {
  const config = options.config ?? configFromEnv()
  const log = options.log ?? ((line: string) => console.log(line))
  const orders = new OrderBook()
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (_details, message) => log(message),
    error: (_details, message) => log(`ERROR ${message}`),
  }
  const credentials = { uid: config.uid, authToken: config.authToken, checksumToken: config.checksumToken }
  // Every result is confirmed over the service's API before a handler runs: handlers see the API's record.
  const receiver = createReceiver({ environment: { baseUrl: config.baseUrl }, credentials, logger })
  const client = createClient({
    environment: { baseUrl: config.baseUrl },
    uid: config.uid,
    authToken: config.authToken,
    checksumToken: config.checksumToken,
    // A buyer waits on the checkout page while the bank list loads: better no list than a long wait.
    timeoutMs: 5_000,
    // Every payment is recorded at creation: results are checked against it, a payment whose results were lost is
    // looked up, and the console shows each one from the moment it was created.
    book: receiver,
    maxRetries: 1,
    logger,
  })
  const banks = bankCatalogue(client, log)
  wireHandlers(receiver, orders, log)
  const appUrl = () => config.publicUrl ?? listeningUrl()
  const orderPath = (payment: { orderNumber: string }) => `/orders/${encodeURIComponent(payment.orderNumber)}`

  return {
    log,
    receiver,
    orders,
    client,
    redirect: { successUrl: orderPath, failureUrl: orderPath, pendingUrl: orderPath },
    checkoutPage: async () => checkoutPage(await banks.current()),
    ordersPage: () => ordersPage(orders.list()),
    orderPage(orderNumber) {
      return orderPage(orders.get(orderNumber))
    },
    async placeOrder(form) {
      const input: CheckoutValues = {
        name: text(form, 'name').replace(/\s+/g, ' '),
        email: text(form, 'email'),
        phone: text(form, 'phone').replace(/[\s-]/g, ''),
        amount: text(form, 'amount'),
        product: text(form, 'product'),
        bank: text(form, 'bank'),
      }
      const problems = validate(input)
      const choice = await banks.current()
      if (input.bank !== '' && !('banks' in choice && choice.banks.some((bank) => bank.online && bank.code === input.bank)))
        problems.bank = 'That bank cannot be used now: pick another or choose at the bank selection page.'
      if (Object.keys(problems).length > 0) return checkoutPage(choice, input, problems)
      const order: Order = {
        orderNumber: newOrderNumber(),
        product: input.product,
        amount: (toSen(input.amount) / 100).toFixed(2),
        buyer: { name: input.name, email: input.email, phone: input.phone },
        createdAt: new Date(),
        state: 'awaiting payment',
        note: null,
        exchangeNumber: null,
      }
      orders.add(order)
      log(`order ${order.orderNumber} placed: RM ${order.amount} for ${order.product}${input.bank === '' ? '' : ` (bank ${input.bank})`}`)
      // The client signs the request and adds the credentials.
      const request = {
        buyer_email: order.buyer.email,
        buyer_name: order.buyer.name,
        buyer_phone: order.buyer.phone,
        callback_url: `${appUrl()}/fpx/callback`,
        order_number: order.orderNumber,
        product_description: order.product,
        redirect_url: `${appUrl()}/fpx/redirect`,
        transaction_amount: order.amount,
        ...(input.bank === '' ? {} : { buyer_bank_code: input.bank }),
      }
      return startPayment(client, config.paymentCreation ?? 'browser-form', request, (why) => {
        order.note = 'the payment could not be started'
        log(`order ${order.orderNumber}: ${why}`)
      })
    },
  }
}
