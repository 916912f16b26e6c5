import { createHash } from 'node:crypto';

/** A file's SHA-256 in hex, from its whole bytes: what HeadPeek.digest() gives of the same bytes streamed. */
export const sha256Hex = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
