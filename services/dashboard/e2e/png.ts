// PNG reading and writing for the tests: images to seed as outputs, and screenshots shrunk for the README.
import { deflateSync, inflateSync } from 'node:zlib';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A real, decodable RGB PNG: a diagonal gradient between two colours (so thumbnails show something). */
export function gradientPng(size: number, from: [number, number, number], to: [number, number, number]): Buffer {
  const row = size * 3 + 1;
  const raw = Buffer.alloc(row * size);
  for (let y = 0; y < size; y++) {
    raw[y * row] = 0;
    for (let x = 0; x < size; x++) {
      const t = (x + y) / (2 * size - 2);
      for (let c = 0; c < 3; c++) raw[y * row + 1 + x * 3 + c] = Math.round(from[c]! + (to[c]! - from[c]!) * t);
    }
  }
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', pngHeader(size, size, 2)), pngChunk('IDAT', deflateSync(raw)), pngChunk('IEND', Buffer.alloc(0))]);
}

/** The pixels of an 8-bit RGB or RGBA PNG (as Chromium writes them), as RGB. */
export function decodePng(png: Buffer): { width: number; height: number; rgb: Buffer } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const depth = png[24];
  const colorType = png[25];
  if (depth !== 8 || (colorType !== 2 && colorType !== 6) || png[28] !== 0) throw new Error(`unsupported PNG (depth ${depth}, colour type ${colorType})`);
  const channels = colorType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[out + x - channels]! : 0;
      const b = y > 0 ? pixels[out - stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[out - stride + x - channels]! : 0;
      let predicted = 0;
      if (filter === 1) predicted = a;
      else if (filter === 2) predicted = b;
      else if (filter === 3) predicted = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      pixels[out + x] = (line[x]! + predicted) & 0xff;
    }
  }
  if (channels === 3) return { width, height, rgb: pixels };
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0, j = 0; i < pixels.length; i += 4, j += 3) pixels.copy(rgb, j, i, i + 3);
  return { width, height, rgb };
}

/**
 * The screenshot as an indexed PNG: the 256 most frequent colours kept exactly (a page is mostly flat colour), every
 * other colour (anti-aliased text edges, gradients) drawn with its nearest palette entry. A third of the RGB size.
 */
export function palettePng(png: Buffer): Buffer {
  const { width, height, rgb } = decodePng(png);
  const counts = new Map<number, number>();
  for (let i = 0; i < rgb.length; i += 3) {
    const c = (rgb[i]! << 16) | (rgb[i + 1]! << 8) | rgb[i + 2]!;
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  const palette = [...counts.entries()].sort((x, y) => y[1] - x[1]).slice(0, 256).map(([c]) => c);
  const index = new Map<number, number>(palette.map((c, i) => [c, i]));
  const nearest = (c: number) => {
    let best = 0;
    let bestDistance = Infinity;
    for (const [i, p] of palette.entries()) {
      const dr = ((c >> 16) & 0xff) - ((p >> 16) & 0xff);
      const dg = ((c >> 8) & 0xff) - ((p >> 8) & 0xff);
      const db = (c & 0xff) - (p & 0xff);
      const d = 2 * dr * dr + 4 * dg * dg + 3 * db * db;
      if (d < bestDistance) [best, bestDistance] = [i, d];
    }
    index.set(c, best);
    return best;
  };
  const raw = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 0;
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const c = (rgb[i]! << 16) | (rgb[i + 1]! << 8) | rgb[i + 2]!;
      raw[y * (width + 1) + 1 + x] = index.get(c) ?? nearest(c);
    }
  }
  const plte = Buffer.alloc(palette.length * 3);
  palette.forEach((c, i) => plte.set([(c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff], i * 3));
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', pngHeader(width, height, 3)), pngChunk('PLTE', plte), pngChunk('IDAT', deflateSync(raw, { level: 9, memLevel: 9 })), pngChunk('IEND', Buffer.alloc(0))]);
}

/** IHDR's data: 8 bits per sample, colour type 2 (RGB) or 3 (indexed), no interlace. */
export function pngHeader(width: number, height: number, colourType: 2 | 3): Buffer {
  const b = Buffer.alloc(13);
  b.writeUInt32BE(width, 0);
  b.writeUInt32BE(height, 4);
  b.set([8, colourType, 0, 0, 0], 8);
  return b;
}

export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(b: Buffer): number {
  let c = 0xffffffff;
  for (const byte of b) c = (CRC_TABLE[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
