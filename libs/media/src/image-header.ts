// Image types and their pixel sizes, read from the first bytes. Each reader returns null when the bytes are not of
// its type; a reader that recognises its type but cannot find the size (beyond the bytes looked at) leaves it out.
import type { SniffedMedia } from './media-type';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function readPng(b: Buffer): SniffedMedia | null {
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  // IHDR must be the first chunk.
  if (b.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { kind: 'image', contentType: 'image/png', extensions: ['png'], width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

export function readGif(b: Buffer): SniffedMedia | null {
  if (b.length < 6) return null;
  const sig = b.toString('latin1', 0, 6);
  if (sig !== 'GIF87a' && sig !== 'GIF89a') return null;
  const info: SniffedMedia = { kind: 'image', contentType: 'image/gif', extensions: ['gif'] };
  return b.length < 10 ? info : { ...info, width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
}

/** Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but are not frames. */
const isStartOfFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

export function readJpeg(b: Buffer): SniffedMedia | null {
  if (b.length < 3 || b[0] !== 0xff || b[1] !== 0xd8 || b[2] !== 0xff) return null;
  const info: SniffedMedia = { kind: 'image', contentType: 'image/jpeg', extensions: ['jpg', 'jpeg'] };
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) break;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      i += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image, or scan data before any frame header
    const length = b.readUInt16BE(i + 2);
    if (isStartOfFrame(marker)) {
      if (i + 9 > b.length) break;
      return { ...info, height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    }
    if (length < 2) break;
    i += 2 + length;
  }
  return info;
}

export function readWebp(b: Buffer): SniffedMedia | null {
  if (b.length < 16 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') return null;
  const info: SniffedMedia = { kind: 'image', contentType: 'image/webp', extensions: ['webp'] };
  const chunk = b.toString('latin1', 12, 16);
  switch (chunk) {
    case 'VP8X':
      if (b.length < 30) return info;
      return { ...info, width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
    case 'VP8L': {
      if (b.length < 25 || b[20] !== 0x2f) return null;
      const bits = b.readUInt32LE(21);
      return { ...info, width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case 'VP8 ':
      if (b.length < 30) return info;
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
      return { ...info, width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
    default:
      return null;
  }
}
