import { createHash } from 'node:crypto';

/** Hex SHA-256 of some bytes: how tests compare what went in with what came out. */
export const sha256 = (bytes: Uint8Array | ArrayBuffer) =>
  createHash('sha256')
    .update(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes)
    .digest('hex');
