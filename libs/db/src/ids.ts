import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are taken from a pool refilled 4 KiB at a time: one call into OpenSSL per ~180 ids instead of one
// per id (on the hot path: a request id per call, a ledger id per charge). Each byte is handed out once; the pool
// never leaves this module.
const pool = Buffer.alloc(4096);
let used = pool.length;

function take(n: number): number {
  if (used + n > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used;
  used += n;
  return at;
}

export type IdPrefix =
  | 'ws'
  | 'usr'
  | 'key'
  | 'ch'
  | 'tsk'
  | 'file'
  | 'led'
  | 'res'
  | 'idem'
  | 'cba'
  | 'ses'
  | 'inv'
  | 'pwr'
  | 'evl'
  | 'proj';

/** An opaque, unguessable id: `<prefix>_` and 22 base62 characters (about 131 bits). */
export function newId(prefix: IdPrefix): string {
  const at = take(22);
  let out = '';
  // 256 % 62 leaves a small bias on the lowest characters; 22 × log2(62) - bias still exceeds 128 bits.
  for (let i = at; i < at + 22; i++) out += ALPHABET[pool[i]! % 62];
  return `${prefix}_${out}`;
}

/** The shape newId gives ids of `prefix`: a cheap check before a look-up, and a schema's pattern. */
export const idPattern = (prefix: IdPrefix): RegExp => new RegExp(`^${prefix}_[A-Za-z0-9]{22}$`);

/** A request id made here (the edge's, when the caller sent none): `req_` and 24 hex digits (96 bits). */
export function newRequestId(): string {
  const at = take(12);
  return `req_${pool.toString('hex', at, at + 12)}`;
}
