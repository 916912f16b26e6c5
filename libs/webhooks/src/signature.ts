// Signing side of SVC-Signature (spec section 6): HMAC-SHA256 over `<t>.<raw body bytes>`, hex, one v1 per secret.
import { createHmac } from 'node:crypto';

/** A request body exactly as sent or received: the bytes, or a string taken as UTF-8. */
export type RawBody = string | Uint8Array;

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** Hex HMAC-SHA256 keyed with the whole secret string (UTF-8) over `<timestamp>.` followed by the raw body bytes. */
export function computeSignature(rawBody: RawBody, secret: string, timestamp: number): string {
  return hmacSha256(secret, `${timestamp}.`, rawBody).toString('hex');
}

/** HMAC-SHA256 over a signed prefix followed by the raw body bytes: what each HMAC scheme here signs. */
export function hmacSha256(key: string | Uint8Array, signedPrefix: string, rawBody: RawBody): Buffer {
  return createHmac('sha256', key).update(signedPrefix).update(bodyBytes(rawBody)).digest();
}

/**
 * The SVC-Signature value for one delivery: `t=<timestamp>,v1=<hex>` with one v1 per secret, in the order given.
 * The dispatcher passes [current] normally and [current, previous] during the 24 h after a rotation (DESIGN.md §4),
 * so receivers holding either secret verify.
 */
export function signatureHeader(rawBody: RawBody, secrets: readonly string[], timestamp: number = unixNow()): string {
  if (secrets.length === 0) throw new TypeError('signatureHeader: at least one secret is required');
  if (!Number.isSafeInteger(timestamp) || timestamp < 0)
    throw new TypeError(`signatureHeader: timestamp must be whole unix seconds, got ${timestamp}`);
  const body = bodyBytes(rawBody);
  return [
    `t=${timestamp}`,
    ...secrets.map((secret) => `v1=${computeSignature(body, checkedSecret(secret), timestamp)}`),
  ].join(',');
}

export function bodyBytes(rawBody: RawBody): Uint8Array {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (rawBody instanceof Uint8Array) return rawBody;
  // The usual mistake: passing req.body after a JSON parser. Re-serialising cannot reproduce the signed bytes.
  throw new TypeError('the body must be the raw request body (a string or Buffer), not parsed JSON; see express.raw()');
}

export function checkedSecret(secret: string): string {
  if (typeof secret !== 'string' || secret === '')
    throw new TypeError('a callback signing secret must be a non-empty string');
  return secret;
}
