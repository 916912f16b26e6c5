// The callback signing secret (DESIGN.md §4): one per workspace, shown to its members, rotated on demand.
import { randomBytes } from 'node:crypto';

export const CALLBACK_SECRET_PREFIX = 'whsec_';
/** whsec_ and 43 base64url characters (32 random bytes). */
export const CALLBACK_SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;

/** The HMAC key is the whole string, prefix included, as its UTF-8 bytes. */
export function newCallbackSecret(): string {
  return CALLBACK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}
