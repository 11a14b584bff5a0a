import { assertChecksumToken } from '../checksum-token.js'
import { hmacSha256HexSync } from '../crypto.js'
import type { FieldInput } from '../values.js'
import { messageOf, type Rendering } from './message.js'

export interface MessageChecksumOptions {
  /**
   * How nested fields such as `params` enter the signed string: Ruby's Hash#inspect text (`ruby`, the default,
   * or `ruby34` for Ruby 3.4's spacing) or one field per bracket name (`flat`). Irrelevant without nested fields.
   */
  rendering?: Exclude<Rendering, 'plain'>
}

/**
 * The `checksum` of a redirect or callback message: every field but `checksum`, sorted by name in byte order,
 * values joined by `|` (booleans as true/false, null as empty), HMAC-SHA256 keyed by the Checksum Token.
 * Signs at once, so it needs node:crypto (Node.js, Bun, Deno, Workers with nodejs_compat).
 */
export function messageChecksum(
  fields: Readonly<Record<string, FieldInput>> | ReadonlyMap<string, FieldInput>,
  checksumToken: string,
  options: MessageChecksumOptions = {},
): string {
  assertChecksumToken(checksumToken)
  return hmacSha256HexSync(checksumToken, messageOf(fields).signedText(options.rendering ?? 'ruby'))
}
