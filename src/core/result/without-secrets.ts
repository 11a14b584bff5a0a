/*
 * A refusal as it may be quoted. Its message, field names and diagnosis quote what the sender chose (field names,
 * an unverified uid), and names are not signed: a signed result may carry `token` (the Auth Token), and the redirect
 * crosses the buyer's browser, so a buyer can put it, or the Basic-auth header's base64 of uid:authToken, in a field
 * name or inside a longer uid. Every caller of the verifier (handle(), receiver.verify(), verifyDelivery()) and so
 * the answer, the log and the console's refusals page get the refusal without them.
 */
import { base64, base64url } from '../base64.js'
import type { CredentialSet } from './credentials.js'
import { ReceiverError, withoutTokenForms } from './errors.js'

const HIDDEN_SECRET = '[redacted]'

/** What a refusal must not quote: each set's tokens and the Basic-auth forms of uid:authToken, and `more`. */
export function refusalSecrets(sets: readonly CredentialSet[], more: readonly string[]): string[] {
  const ofSet = (set: CredentialSet) => {
    const auth = set.authToken ?? ''
    return auth === '' ? [set.checksumToken] : [set.checksumToken, auth, base64(`${set.uid}:${auth}`), base64url(`${set.uid}:${auth}`)]
  }
  return [...sets.flatMap(ofSet), ...more].filter((secret) => secret !== '')
}

/** Text with every secret taken out. */
function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(HIDDEN_SECRET)
  return out
}

/** Plain data (a diagnosis) with every string, keys included, passed through withoutSecrets. */
function dataWithoutSecrets<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === 'string') return withoutSecrets(value, secrets) as T
  if (Array.isArray(value)) return value.map((item: unknown) => dataWithoutSecrets(item, secrets)) as T
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [withoutSecrets(key, secrets), dataWithoutSecrets(item, secrets)])) as T
}

/**
 * The refusal itself when it quotes none of `secrets`, else a copy with them taken out of everything it quotes. Its
 * field names lose the Auth Token's form too, as its message's do (quotedName): a partner receiver refusing at
 * parsing (a repeated name) knows no token yet, and the name there is the sender's.
 */
export function quotable(error: ReceiverError, secrets: readonly string[]): ReceiverError {
  const fields = error.fields?.map((name) => withoutTokenForms(withoutSecrets(name, secrets)))
  const texts = [error.message, JSON.stringify(error.diagnosis ?? null)]
  const renamed = fields !== undefined && fields.some((name, i) => name !== error.fields?.[i])
  if (!renamed && !secrets.some((secret) => texts.some((text) => text.includes(secret)))) return error
  return new ReceiverError(error.code, withoutSecrets(error.message, secrets), {
    ...(fields === undefined ? {} : { fields }),
    ...(error.cause === undefined ? {} : { cause: error.cause }),
    ...(error.diagnosis === undefined ? {} : { diagnosis: dataWithoutSecrets(error.diagnosis, secrets) }),
  })
}
