// The callback signing secret (DESIGN.md §4): one per workspace, shown to its members, rotated on demand.
import { randomBytes } from 'node:crypto';

export const CALLBACK_SECRET_PREFIX = 'whsec_';
/** whsec_ and 43 base64url characters (32 random bytes). */
export const CALLBACK_SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;

/**
 * For this long after a rotation the dispatcher signs with [current, previous], so the header carries two v1 values
 * and a receiver still holding the old secret keeps verifying until it has rolled (DESIGN.md §4).
 */
export const ROTATION_OVERLAP_SECONDS = 24 * 60 * 60;

/** The HMAC key is the whole string, prefix included, as its UTF-8 bytes. */
export function newCallbackSecret(): string {
  return CALLBACK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}
