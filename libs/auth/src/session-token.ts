// Opaque secrets for dashboard sessions and invitation links: 256 random bits, handed out once, stored only as their
// SHA-256. The CSRF token is derived from the session (an HMAC under the server's secret), so it needs no storage
// and no other session's token can pass for it.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export function newOpaqueToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

/** A well-formed opaque token (43 base64url characters); anything else is refused before any look-up. */
export const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function csrfTokenFor(serverSecret: string, sessionHash: string): string {
  return createHmac('sha256', serverSecret).update(`csrf:${sessionHash}`).digest('base64url');
}

/** Constant-time equality of two strings (false when their lengths differ). */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A device cookie (OWASP "Slow Down Online Guessing Attacks with Device Cookies"): a browser that signed in as an
 * account gets `<nonce>.<HMAC of the account's e-mail and the nonce>`. It names no account, and passes only for the
 * account it was issued for.
 */
export function newDeviceToken(serverSecret: string, email: string): string {
  const nonce = randomBytes(16).toString('base64url');
  return `${nonce}.${deviceMac(serverSecret, email, nonce)}`;
}

/** The nonce of a device token issued for `email` under this secret; null for any other value. */
export function deviceNonce(serverSecret: string, email: string, token: string | undefined): string | null {
  const m = token === undefined ? null : /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  return sameToken(m[2]!, deviceMac(serverSecret, email, m[1]!)) ? m[1]! : null;
}

const deviceMac = (serverSecret: string, email: string, nonce: string) =>
  createHmac('sha256', serverSecret).update(`device:${email.toLowerCase()}:${nonce}`).digest('base64url');

/**
 * A mailed link's secret, derived from its row under the server's secret (SIGNING_SECRET): what the row names
 * (`purpose`, its id, and for an invitation its send count) is enough for the sender to remake the link, so no queue
 * payload and no column holds it; the row stores only its SHA-256. 256 bits, OPAQUE_TOKEN's shape. A new server
 * secret ends every link made under the old one.
 */
export function linkToken(
  serverSecret: string,
  purpose: 'invitation' | 'password-reset',
  id: string,
  send = 1,
): { token: string; hash: string } {
  const token = createHmac('sha256', serverSecret).update(`link:${purpose}:${id}:${send}`).digest('base64url');
  return { token, hash: hashToken(token) };
}
