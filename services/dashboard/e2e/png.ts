// PNG for the tests: images to seed as outputs, and screenshots (Chromium's PNGs, every scanline filter) decoded and
// shrunk for the README. Written by @gensvc/media's encodePng.
import { inflateSync } from 'node:zlib';
import { encodePng } from '@gensvc/media';

/** A real, decodable RGB PNG: a diagonal gradient between two colours (so thumbnails show something). */
export function gradientPng(size: number, from: [number, number, number], to: [number, number, number]): Buffer {
  const pixels = Buffer.alloc(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const t = (x + y) / (2 * size - 2);
      for (let c = 0; c < 3; c++) pixels[(y * size + x) * 3 + c] = Math.round(from[c]! + (to[c]! - from[c]!) * t);
    }
  }
  return encodePng({ width: size, height: size, pixels });
}

/** The pixels of an 8-bit RGB or RGBA PNG (as Chromium writes them), as RGB. */
export function decodePng(png: Buffer): { width: number; height: number; rgb: Buffer } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const depth = png[24];
  const colorType = png[25];
  if (depth !== 8 || (colorType !== 2 && colorType !== 6) || png[28] !== 0)
    throw new Error(`unsupported PNG (depth ${depth}, colour type ${colorType})`);
  const channels = colorType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const pixels = unfilter(inflateSync(Buffer.concat(idat)), width, height, channels);
  if (channels === 3) return { width, height, rgb: pixels };
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0, j = 0; i < pixels.length; i += 4, j += 3) pixels.copy(rgb, j, i, i + 3);
  return { width, height, rgb };
}

/** Scanlines (each led by its filter type, PNG's five) back to pixels of `channels` bytes each. */
export function unfilter(raw: Buffer, width: number, height: number, channels: number): Buffer {
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
  return pixels;
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
  const palette = [...counts.entries()]
    .sort((x, y) => y[1] - x[1])
    .slice(0, 256)
    .map(([c]) => c);
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
  const indices = Buffer.alloc(width * height);
  for (let i = 0; i < indices.length; i++) {
    const c = (rgb[i * 3]! << 16) | (rgb[i * 3 + 1]! << 8) | rgb[i * 3 + 2]!;
    indices[i] = index.get(c) ?? nearest(c);
  }
  const plte = Buffer.alloc(palette.length * 3);
  for (const [i, c] of palette.entries()) plte.set([(c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff], i * 3);
  return encodePng({ width, height, pixels: indices, colour: 'indexed', palette: plte });
}
