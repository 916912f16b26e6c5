// ENCRYPTION_KEYS: the keys that seal secrets at rest (channel credentials, callback signing secrets). A list of
// `<key id>:<base64 of 32 bytes>`, comma-separated: the first seals, every one opens, so a key is rotated by putting
// a new one first, re-sealing (`npm run admin -- secrets reencrypt`) and then dropping the old one.
import { z } from 'zod';

/** One AES-256 key and the id stored beside every value it sealed. */
export interface EncryptionKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** Key ids: short and free of the `:` that separates a sealed value's fields. */
export const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

/** Parses the list; each problem names the entry by position and id, never its key. */
export const encryptionKeys = z.string().transform((value, ctx): EncryptionKey[] => {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const keys: EncryptionKey[] = [];
  const problem = (message: string) => ctx.addIssue({ code: 'custom', message });
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon);
    const encoded = colon < 0 ? '' : entry.slice(colon + 1);
    if (!KEY_ID.test(id)) {
      problem(`entry ${i + 1} must be <key id>:<base64 key>, the id 1-32 letters, digits, "_" or "-"`);
      return;
    }
    const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) problem(`key "${id}" must be 32 bytes in base64 (openssl rand -base64 32)`);
    else if (keys.some((k) => k.id === id)) problem(`key id "${id}" appears twice`);
    else keys.push({ id, key });
  });
  if (entries.length === 0) problem('must list at least one <key id>:<base64 key>');
  return keys;
});

/** ENCRYPTION_KEYS alone, for the tools that read no other variable (the admin CLI, npm start's seeding). */
export function parseEncryptionKeys(value: string | undefined): EncryptionKey[] {
  if (!value) throw new Error('ENCRYPTION_KEYS is required: <key id>:<base64 32 bytes>, comma-separated');
  const parsed = encryptionKeys.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new Error(`ENCRYPTION_KEYS: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
}
