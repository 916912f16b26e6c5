// The secrets of local runs (`npm start`, and `npm run admin` beside it): made once, kept in <data dir>/secrets.json
// (mode 600) so a restart opens what the last run sealed. A deployment sets its own; so may a local run, and then its
// value wins. Tests make their own per run (libs/testing's global setup).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalSecrets {
  SIGNING_SECRET: string;
  ENCRYPTION_KEYS: string;
}

/**
 * A fresh ENCRYPTION_KEYS value: one random 32-byte key, its id `<name>-<random>` so that a row sealed by another
 * checkout's or run's key names a key this one does not have, and fails to open as such.
 */
export const newEncryptionKeys = (name = 'local') =>
  `${name}-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`;

/** The local secrets, with any missing from the file made and written back. */
export function localSecrets(dataDir: string): LocalSecrets {
  const file = join(dataDir, 'secrets.json');
  const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalSecrets>) : {};
  const secrets: LocalSecrets = {
    SIGNING_SECRET: kept.SIGNING_SECRET || randomBytes(32).toString('hex'),
    ENCRYPTION_KEYS: kept.ENCRYPTION_KEYS || newEncryptionKeys(),
  };
  if (secrets.SIGNING_SECRET !== kept.SIGNING_SECRET || secrets.ENCRYPTION_KEYS !== kept.ENCRYPTION_KEYS) {
    writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}
