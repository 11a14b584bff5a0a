/**
 * Text as base64 of its UTF-8 bytes (btoa alone takes Latin-1 only), and the URL-safe form without padding: the
 * Basic-auth header's form of uid:authToken, which the client sends and which no answer or refusal may quote.
 */
export function base64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)))
}

export function base64url(text: string): string {
  return base64(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}
