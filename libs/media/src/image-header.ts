// Image types and their pixel sizes, read from the first bytes. Each reader returns null when the bytes are not of
// its type, and also when they do not show the image's size (at least 1 pixel each side): bytes that start like an
// image but stop before the header says how large it is (a 6-byte "GIF89a", a JPEG with no frame header within the
// bytes looked at) are no image anyone can decode, and are not stored or sent as one.

/** The size a header shows, or null when a side is 0 (no pixel to decode). */
const sized = (info: SniffedMedia, width: number, height: number): SniffedMedia | null =>
  width >= 1 && height >= 1 ? { ...info, width, height } : null;
import type { SniffedMedia } from './media-type';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function readPng(b: Buffer): SniffedMedia | null {
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  // IHDR must be the first chunk, 13 bytes long.
  if (b.readUInt32BE(8) !== 13 || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  return sized(
    { kind: 'image', contentType: 'image/png', extensions: ['png'] },
    b.readUInt32BE(16),
    b.readUInt32BE(20),
  );
}

export function readGif(b: Buffer): SniffedMedia | null {
  // The signature and the whole logical screen descriptor (size, flags, background, aspect): 13 bytes.
  if (b.length < 13) return null;
  const sig = b.toString('latin1', 0, 6);
  if (sig !== 'GIF87a' && sig !== 'GIF89a') return null;
  return sized({ kind: 'image', contentType: 'image/gif', extensions: ['gif'] }, b.readUInt16LE(6), b.readUInt16LE(8));
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
      return sized(info, b.readUInt16BE(i + 7), b.readUInt16BE(i + 5));
    }
    if (length < 2) break;
    i += 2 + length;
  }
  return null;
}

export function readWebp(b: Buffer): SniffedMedia | null {
  if (b.length < 16 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') return null;
  const info: SniffedMedia = { kind: 'image', contentType: 'image/webp', extensions: ['webp'] };
  const chunk = b.toString('latin1', 12, 16);
  switch (chunk) {
    case 'VP8X':
      if (b.length < 30) return null;
      return sized(info, b.readUIntLE(24, 3) + 1, b.readUIntLE(27, 3) + 1);
    case 'VP8L': {
      if (b.length < 25 || b[20] !== 0x2f) return null;
      const bits = b.readUInt32LE(21);
      return sized(info, (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
    }
    case 'VP8 ':
      if (b.length < 30) return null;
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
      return sized(info, b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff);
    default:
      return null;
  }
}
