// The callback signing secret (DESIGN.md §4): one per workspace, shown to its members, rotated on demand.
import { randomBytes } from 'node:crypto';

export const CALLBACK_SECRET_PREFIX = 'whsec_';
/**
 * whsec_ and 32 random bytes in padded standard base64, the form every Standard Webhooks library decodes (the
 * url-safe alphabet makes the JavaScript one throw; missing padding, Python's and Go's).
 */
export const CALLBACK_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** SVC-Signature's HMAC key is the whole string, prefix included, as UTF-8; Standard Webhooks' the decoded bytes. */
export function newCallbackSecret(): string {
  return CALLBACK_SECRET_PREFIX + randomBytes(32).toString('base64');
}
