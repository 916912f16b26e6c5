// The one PNG writer: 8-bit greyscale, RGB or indexed images (sim outputs, test media, screenshots), every chunk
// with its CRC and the scanlines compressed by zlib, so any PNG reader accepts what it writes.
import { crc32, deflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** PNG colour types and their bytes per pixel at 8 bits per sample. */
const COLOUR = { grey: { type: 0, bytes: 1 }, rgb: { type: 2, bytes: 3 }, indexed: { type: 3, bytes: 1 } } as const;

export interface PngImage {
  width: number;
  height: number;
  /** Rows top to bottom, no filter bytes: 1 byte per pixel (grey, indexed) or 3 (rgb). */
  pixels: Buffer;
  /** Default rgb. */
  colour?: keyof typeof COLOUR;
  /** For indexed images: RGB triples, at most 256. */
  palette?: Buffer;
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** The image as PNG bytes: signature, IHDR, PLTE (indexed only), one IDAT, IEND. */
export function encodePng({ width, height, pixels, colour = 'rgb', palette }: PngImage): Buffer {
  const { type, bytes } = COLOUR[colour];
  const stride = width * bytes;
  if (pixels.length !== stride * height) {
    throw new RangeError(`expected ${stride * height} pixel bytes, got ${pixels.length}`);
  }
  if ((colour === 'indexed') !== (palette !== undefined)) {
    throw new RangeError('a palette goes with indexed images only');
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, type, 0, 0, 0], 8);
  // Each scanline is led by its filter type: 0 (None).
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) pixels.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', ihdr),
    ...(palette ? [chunk('PLTE', palette)] : []),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
