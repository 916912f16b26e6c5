// Secrets at rest (channel credentials, callback signing secrets) are sealed with AES-256-GCM under the first of
// ENCRYPTION_KEYS: `v1:<key id>:<iv>:<ciphertext and tag>`, base64url. The additional data names the row and the
// column's purpose (secretAad), so a sealed value copied into another row or column does not open. A database dump
// alone holds no secret.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What a value is sealed for: the column's purpose and its row's id. */
export type SecretPurpose = 'channel.secret' | 'callback-secret';
export const secretAad = (purpose: SecretPurpose, rowId: string) => `gensvc:${purpose}:${rowId}`;

/** The values a column held before it was sealed are plaintext: read as they are until re-sealed. */
export const isSealed = (stored: string) => stored.startsWith(`${VERSION}:`);

/** A sealed value that does not open: a key it names is missing from ENCRYPTION_KEYS, or it was altered or moved. */
export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

export class SecretBox {
  private readonly keys: ReadonlyMap<string, Buffer>;
  /** The id of the key that seals. */
  readonly currentKeyId: string;

  constructor(keys: readonly { id: string; key: Buffer }[]) {
    if (!keys.length) throw new SecretBoxError('no encryption key');
    for (const k of keys) if (k.key.length !== 32) throw new SecretBoxError(`key ${k.id} is not 32 bytes`);
    this.keys = new Map(keys.map((k) => [k.id, k.key]));
    this.currentKeyId = keys[0]!.id;
  }

  seal(plaintext: string, aad: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}:${this.currentKeyId}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
  }

  /** The plaintext of a stored value; a value that is not sealed (written before sealing) is returned as it is. */
  open(stored: string, aad: string): string {
    if (!isSealed(stored)) return stored;
    const [, kid, ivText, sealedText, extra] = stored.split(':');
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (!key) throw new SecretBoxError(`sealed under key "${kid}", which ENCRYPTION_KEYS does not list`);
    const iv = Buffer.from(ivText ?? '', 'base64url');
    const sealed = Buffer.from(sealedText ?? '', 'base64url');
    if (extra !== undefined || iv.length !== IV_BYTES || sealed.length < TAG_BYTES) {
      throw new SecretBoxError('not a sealed value');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new SecretBoxError('a sealed value does not open: altered, or moved from another row');
    }
  }

  /** Whether a stored value is sealed under the current key (re-sealing leaves it as it is). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${VERSION}:${this.currentKeyId}:`);
  }
}
