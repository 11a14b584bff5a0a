/*
 * A refusal as it may be quoted. Its message, field names and diagnosis quote what the sender chose (field names,
 * an unverified uid), and names are not signed: a signed result may carry `token` (the Auth Token), and the redirect
 * crosses the buyer's browser, so a buyer can put it, or the Basic-auth header's base64 of uid:authToken, in a field
 * name or inside a longer uid. Every caller of the verifier (handle(), receiver.verify(), verifyDelivery()) and so
 * the answer, the log and the console's refusals page get the refusal without them.
 */
import { base64, base64url } from '../base64.js'
import type { CredentialSet } from './credentials.js'
import type { Diagnosis, DiagnosisAttempt } from './diagnosis.js'
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

/**
 * Query parameters with every secret taken out of their names and values: a check-again link keeps the URL's own
 * parameters, which are not signed, so the buyer can add the token a result echoed to them.
 */
export function paramsWithoutSecrets(params: URLSearchParams, secrets: readonly string[]): URLSearchParams {
  return new URLSearchParams([...params].map(([name, value]): [string, string] => [withoutSecrets(name, secrets), withoutSecrets(value, secrets)]))
}

/** Plain data (a diagnosis) with every string, keys included, passed through withoutSecrets. */
export function dataWithoutSecrets<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === 'string') return withoutSecrets(value, secrets) as T
  if (Array.isArray(value)) return value.map((item: unknown) => dataWithoutSecrets(item, secrets)) as T
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [withoutSecrets(key, secrets), dataWithoutSecrets(item, secrets)])) as T
}

/** A name the sender chose, as a refusal quotes it outside its message: as quotedName shows it, unquoted and uncut. */
function shownName(name: string, secrets: readonly string[]): string {
  return withoutTokenForms(withoutSecrets(name, secrets))
}

/** The attempts of a diagnosis that name a field (field_added, field_dropped): the name is the sender's. */
function namingAttempts(diagnosis: Diagnosis | undefined): DiagnosisAttempt[] {
  return diagnosis === undefined ? [] : [...(diagnosis.match === undefined ? [] : [diagnosis.match]), ...diagnosis.tried].filter((attempt) => attempt.field !== undefined)
}

function diagnosisWithout(diagnosis: Diagnosis, secrets: readonly string[]): Diagnosis {
  const attempt = (tried: DiagnosisAttempt): DiagnosisAttempt => {
    const shown = dataWithoutSecrets(tried, secrets)
    return shown.field === undefined ? shown : { ...shown, field: withoutTokenForms(shown.field) }
  }
  return { ...dataWithoutSecrets(diagnosis, secrets), match: diagnosis.match === undefined ? undefined : attempt(diagnosis.match), tried: diagnosis.tried.map(attempt) }
}

/**
 * The refusal itself when it quotes none of `secrets`, else a copy with them taken out of everything it quotes. The
 * names it quotes outside its message (its fields, a diagnosis's field) lose the Auth Token's form too, as its
 * message's do (quotedName): a receiver may know no Auth Token to take out (a partner's before the uid is looked up,
 * a signature-only one given only Checksum Tokens), and those names are the sender's.
 */
export function quotable(error: ReceiverError, secrets: readonly string[]): ReceiverError {
  const fields = error.fields?.map((name) => shownName(name, secrets))
  const renamed =
    (fields?.some((name, i) => name !== error.fields?.[i]) ?? false) ||
    namingAttempts(error.diagnosis).some((attempt) => shownName(attempt.field as string, secrets) !== attempt.field)
  const texts = [error.message, JSON.stringify(error.diagnosis ?? null)]
  if (!renamed && !secrets.some((secret) => texts.some((text) => text.includes(secret)))) return error
  return new ReceiverError(error.code, withoutSecrets(error.message, secrets), {
    ...(fields === undefined ? {} : { fields }),
    ...(error.cause === undefined ? {} : { cause: error.cause }),
    ...(error.diagnosis === undefined ? {} : { diagnosis: diagnosisWithout(error.diagnosis, secrets) }),
  })
}
