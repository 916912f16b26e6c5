import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An opaque, unguessable id: `<prefix>_` and 22 base62 characters (about 131 bits). */
export function newId(prefix: 'ws' | 'usr' | 'key' | 'ch' | 'tsk' | 'file' | 'led' | 'res' | 'idem' | 'cba' | 'ses' | 'inv'): string {
  const bytes = randomBytes(22);
  let out = '';
  // 256 % 62 leaves a small bias on the lowest characters; 22 × log2(62) - bias still exceeds 128 bits.
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${prefix}_${out}`;
}
