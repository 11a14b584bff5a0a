import type { ClientContext } from './context.js'
import { type CredentialResult, credentialResultSchema, readOutput } from './schemas.js'

/**
 * POST /v1/merchants/validate: checks the API UID, Auth Token and Checksum Token together. A wrong one is
 * FpxAuthenticationError (401), never `credential: false`. It creates nothing, so it is retried like a read.
 */
export async function validateCredentials(context: ClientContext): Promise<CredentialResult> {
  const what = 'POST /v1/merchants/validate'
  const answer = await context.http.send({
    method: 'POST',
    path: '/v1/merchants/validate',
    form: { checksum_token: context.config.checksumToken },
    basicAuth: true,
    retry: true,
  })
  return readOutput(credentialResultSchema, context.http.json(what, answer), what, answer.status)
}
