import { z } from 'zod'
import { AUTH_TOKEN_PATTERN, CHECKSUM_TOKEN_PATTERN, newAuthToken, newChecksumToken, newPartnerUid, newUid, UUID_PATTERN } from './ids.js'

/**
 * The emulator's configuration file: merchants (several credential sets each, B2B1 module on or off), partners
 * and banks. Credentials left out are generated; everything else has a default. A section given replaces the
 * seeded default for that section.
 */
const credentialSchema = z.object({
  /** api_name in credential validation and interface_name in transaction records. */
  name: z.string().min(1).optional(),
  uid: z.string().regex(UUID_PATTERN, 'expected a UUID').optional(),
  authToken: z.string().regex(AUTH_TOKEN_PATTERN, 'expected 20 letters or digits').optional(),
  checksumToken: z.string().regex(CHECKSUM_TOKEN_PATTERN, 'expected 64 lowercase hexadecimal characters').optional(),
})

const merchantSchema = z.object({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  coNumber: z.string().optional(),
  b2b1: z.boolean().optional(),
  paymentMode: z.enum(['merchant', 'customer', 'merchant_credit']).optional(),
  transactionFee: z.string().regex(/^\d+\.\d{2}$/).optional(),
  credentials: z.array(credentialSchema).min(1).optional(),
})

const partnerSchema = z.object({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  partnerUids: z.array(z.string().min(1)).min(1).optional(),
  b2b1: z.boolean().optional(),
  /** Ids of the merchants this partner may create payments for. */
  merchants: z.array(z.string().min(1)).optional(),
  credentials: z.array(credentialSchema).min(1).optional(),
})

const bankSchema = z.object({
  code: z.string().min(1),
  name: z.string().min(1),
  status: z.enum(['online', 'offline']).optional(),
})

export const emulatorConfigSchema = z.object({
  /** The `mode` of bank lists. */
  mode: z.enum(['staging', 'production']).optional(),
  merchants: z.array(merchantSchema).min(1).optional(),
  partners: z.array(partnerSchema).optional(),
  banks: z.object({ b2c: z.array(bankSchema).optional(), b2b1: z.array(bankSchema).optional() }).optional(),
  /** The spec lists `token` among the fields seen in signed results; off by default so it never reaches a browser. */
  includeTokenInResults: z.boolean().optional(),
  /** MYR per USD for payment sessions in USD (the spec's "current rate"; the emulator's is fixed). */
  usdToMyrRate: z.number().positive().optional(),
  /** Refuse what the real service is seen to accept but the spec's strict reading does not (docs/emulator.md). */
  strict: z.boolean().optional(),
  /** Callback delivery; `startEmulator({ delivery })` options override these. */
  delivery: z
    .strictObject({
      attempts: z.int().min(1).max(100).optional(),
      initialDelayMs: z.int().min(0).optional(),
      maxDelayMs: z.int().min(0).optional(),
      timeoutMs: z.int().min(1).optional(),
      callbackTransport: z.enum(['body', 'query', 'both']).optional(),
      redirectCountsAsDelivered: z.boolean().optional(),
    })
    .optional(),
})

export type EmulatorConfig = z.input<typeof emulatorConfigSchema>
export type MerchantConfig = z.input<typeof merchantSchema>
export type PartnerConfig = z.input<typeof partnerSchema>

export interface CredentialSet {
  readonly name: string
  readonly uid: string
  readonly authToken: string
  readonly checksumToken: string
}

export type PaymentMode = 'merchant' | 'customer' | 'merchant_credit'

export interface Merchant {
  readonly id: string
  readonly name: string
  readonly coNumber: string
  readonly b2b1: boolean
  readonly paymentMode: PaymentMode
  readonly transactionFee: string
  readonly credentials: readonly CredentialSet[]
}

export interface Partner {
  readonly id: string
  readonly name: string
  readonly partnerUids: readonly string[]
  readonly b2b1: boolean
  readonly merchantIds: readonly string[]
  readonly credentials: readonly CredentialSet[]
}

export type BankStatus = 'online' | 'offline'

export interface Bank {
  readonly code: string
  readonly name: string
  status: BankStatus
}

export interface Setup {
  readonly mode: 'staging' | 'production'
  readonly merchants: readonly Merchant[]
  readonly partners: readonly Partner[]
  readonly banks: { readonly b2c: Bank[]; readonly b2b1: Bank[] }
  readonly includeTokenInResults: boolean
  readonly usdToMyrRate: number
}

/** The credentials of the example shops (examples/shared/shop.ts DEMO_CONFIG), so they work against the emulator. */
export const DEMO_MERCHANT: MerchantConfig = {
  id: 'demo-merchant',
  name: 'Demo Merchant Sdn Bhd',
  coNumber: '202601000001',
  b2b1: true,
  credentials: [
    {
      name: 'Demo API',
      uid: '0c0ffee0-d3e0-4a11-8f00-00000000d3e0',
      authToken: 'DemoAuthToken0000000',
      checksumToken: '0123456789abcdef'.repeat(4),
    },
  ],
}

export const DEMO_PARTNER: PartnerConfig = {
  id: 'demo-partner',
  name: 'Demo Marketplace Sdn Bhd',
  partnerUids: ['demo-partner-0001'],
  b2b1: true,
  credentials: [
    {
      name: 'Demo Partner API',
      uid: 'fa27e000-d3e0-4a11-8f00-00000000fa27',
      authToken: 'DemoPartnerToken0000',
      checksumToken: 'fedcba9876543210'.repeat(4),
    },
  ],
}

const DEFAULT_B2C_BANKS: ReadonlyArray<z.input<typeof bankSchema>> = [
  { code: 'ABB0233', name: 'Affin Bank' },
  { code: 'ABMB0212', name: 'Alliance Bank (Personal)' },
  { code: 'AMBB0209', name: 'AmBank' },
  { code: 'BIMB0340', name: 'Bank Islam' },
  { code: 'BCBB0235', name: 'CIMB Clicks' },
  { code: 'HLB0224', name: 'Hong Leong Bank' },
  { code: 'MB2U0227', name: 'Maybank2U' },
  { code: 'PBB0233', name: 'Public Bank' },
  { code: 'RHB0218', name: 'RHB Bank' },
  { code: 'UOB0226', name: 'UOB Bank', status: 'offline' },
]

const DEFAULT_B2B1_BANKS: ReadonlyArray<z.input<typeof bankSchema>> = [
  { code: 'ABB0232', name: 'Affin Bank (Business)' },
  { code: 'AMBB0208', name: 'AmBank BizRenew' },
  { code: 'BCBB0235', name: 'CIMB BizChannel' },
  { code: 'MBB0228', name: 'Maybank2E' },
  { code: 'RHB0218', name: 'RHB Reflex', status: 'offline' },
]

/**
 * The FPX test banks the service's sandbox lists (mode staging) besides the real ones, in both models; a
 * production-mode emulator leaves them out.
 */
const SANDBOX_BANKS: ReadonlyArray<z.input<typeof bankSchema>> = [
  { code: 'TEST0021', name: 'SBI Bank A' },
  { code: 'TEST0022', name: 'SBI Bank B' },
  { code: 'TEST0023', name: 'SBI Bank C' },
]

/** A plausible recent rate; tests that care set their own. */
export const DEFAULT_USD_TO_MYR_RATE = 4.2

function credentialSets(given: ReadonlyArray<z.output<typeof credentialSchema>> | undefined, fallbackName: string): CredentialSet[] {
  return (given ?? [{}]).map((set, index) => ({
    name: set.name ?? (index === 0 ? fallbackName : `${fallbackName} ${index + 1}`),
    uid: set.uid ?? newUid(),
    authToken: set.authToken ?? newAuthToken(),
    checksumToken: set.checksumToken ?? newChecksumToken(),
  }))
}

function banks(given: ReadonlyArray<z.input<typeof bankSchema>>): Bank[] {
  return given.map((bank) => ({ code: bank.code, name: bank.name, status: bank.status ?? 'online' }))
}

/** Validates a configuration (throws a readable error) and fills in every default and generated credential. */
export function resolveConfig(input: EmulatorConfig = {}): Setup {
  const parsed = emulatorConfigSchema.safeParse(input)
  if (!parsed.success) throw new TypeError(`invalid emulator configuration: ${z.prettifyError(parsed.error)}`)
  const config = parsed.data
  const mode = config.mode ?? 'staging'
  const withSandbox = (list: ReadonlyArray<z.input<typeof bankSchema>>) => (mode === 'staging' ? [...list, ...SANDBOX_BANKS] : list)
  const merchants: Merchant[] = (config.merchants ?? [DEMO_MERCHANT]).map((merchant, index) => ({
    id: merchant.id ?? `merchant-${index + 1}`,
    name: merchant.name,
    coNumber: merchant.coNumber ?? `2026010${String(index + 1).padStart(5, '0')}`,
    b2b1: merchant.b2b1 ?? false,
    paymentMode: merchant.paymentMode ?? 'merchant',
    transactionFee: merchant.transactionFee ?? '1.00',
    credentials: credentialSets(merchant.credentials, `${merchant.name} API`),
  }))
  const partners: Partner[] = (config.partners ?? [DEMO_PARTNER]).map((partner, index) => ({
    id: partner.id ?? `partner-${index + 1}`,
    name: partner.name,
    partnerUids: partner.partnerUids ?? [newPartnerUid()],
    b2b1: partner.b2b1 ?? false,
    merchantIds: partner.merchants ?? merchants.map((merchant) => merchant.id),
    credentials: credentialSets(partner.credentials, `${partner.name} API`),
  }))
  const merchantIds = new Set(merchants.map((merchant) => merchant.id))
  if (merchantIds.size !== merchants.length) throw new TypeError('invalid emulator configuration: two merchants share an id')
  for (const partner of partners)
    for (const id of partner.merchantIds)
      if (!merchantIds.has(id)) throw new TypeError(`invalid emulator configuration: partner "${partner.name}" lists unknown merchant "${id}"`)
  const partnerUids = partners.flatMap((partner) => partner.partnerUids)
  if (new Set(partnerUids).size !== partnerUids.length) throw new TypeError('invalid emulator configuration: two partners share a partner_uid')
  const uids = [...merchants, ...partners].flatMap((account) => account.credentials.map((set) => set.uid))
  const tokens = [...merchants, ...partners].flatMap((account) => account.credentials.map((set) => set.authToken))
  // Payment creation finds the credential set by its Auth Token alone, so tokens (and uids) must be unique.
  if (new Set(uids).size !== uids.length) throw new TypeError('invalid emulator configuration: two credential sets share an API UID')
  if (new Set(tokens).size !== tokens.length) throw new TypeError('invalid emulator configuration: two credential sets share an Auth Token')
  return {
    mode,
    merchants,
    partners,
    banks: { b2c: banks(config.banks?.b2c ?? withSandbox(DEFAULT_B2C_BANKS)), b2b1: banks(config.banks?.b2b1 ?? withSandbox(DEFAULT_B2B1_BANKS)) },
    includeTokenInResults: config.includeTokenInResults ?? false,
    usdToMyrRate: config.usdToMyrRate ?? DEFAULT_USD_TO_MYR_RATE,
  }
}
