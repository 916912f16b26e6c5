// Workspace API keys (DESIGN.md §5): a random 256-bit secret shown once; only its SHA-256 is stored; a short,
// non-secret prefix is kept for display.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'gsk_';
/** gsk_ and 43 base64url characters (32 random bytes). */
export const API_KEY_PATTERN = /^gsk_[A-Za-z0-9_-]{43}$/;
const DISPLAY_LENGTH = API_KEY_PREFIX.length + 8;

export interface NewApiKey {
  /** Shown once to the caller, never stored. */
  secret: string;
  prefix: string;
  hash: string;
}

export function newApiKey(): NewApiKey {
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { secret, prefix: displayPrefix(secret), hash: hashApiKey(secret) };
}

/** Once per authenticated call: the one-shot digest costs a third of a Hash object's. */
export function hashApiKey(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function displayPrefix(secret: string): string {
  return secret.slice(0, DISPLAY_LENGTH);
}

/** Constant-time comparison of two hex SHA-256 digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

export type CredentialProblem = 'missing' | 'malformed';

/**
 * Reads `Authorization: Bearer <key>`: the word Bearer, exactly one space, the complete key. Anything else is
 * malformed (a lower-case scheme, two spaces, a truncated key, trailing text).
 */
export function parseBearer(header: string | undefined): { key: string } | { problem: CredentialProblem } {
  if (header === undefined || header === '') return { problem: 'missing' };
  const m = /^Bearer ([^ ]+)$/.exec(header);
  if (!m || !API_KEY_PATTERN.test(m[1]!)) return { problem: 'malformed' };
  return { key: m[1]! };
}

/** A key sent bare in a vendor header (x-api-key, x-goog-api-key). */
export function parseBareKey(value: string | undefined): { key: string } | { problem: CredentialProblem } {
  if (value === undefined || value === '') return { problem: 'missing' };
  return API_KEY_PATTERN.test(value) ? { key: value } : { problem: 'malformed' };
}
