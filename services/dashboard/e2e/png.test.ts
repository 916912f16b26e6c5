// The screenshot shrinker: decodes Chromium's PNGs (every scanline filter) and writes an indexed PNG of the same
// picture.
import { inflateSync } from 'node:zlib';
import { encodePng } from '@gensvc/media';
import { decodePng, gradientPng, palettePng, unfilter } from './png';

/** Reads back an indexed PNG written by palettePng (filter 0 on every line) as RGB. */
function readIndexed(png: Buffer) {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const chunks = new Map<string, Buffer[]>();
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    chunks.set(type, [...(chunks.get(type) ?? []), png.subarray(at + 8, at + 8 + length)]);
    at += 12 + length;
  }
  expect(png[25]).toBe(3);
  const plte = chunks.get('PLTE')![0]!;
  const raw = inflateSync(Buffer.concat(chunks.get('IDAT')!));
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    expect(raw[y * (width + 1)]).toBe(0);
    for (let x = 0; x < width; x++)
      plte.copy(rgb, (y * width + x) * 3, raw[y * (width + 1) + 1 + x]! * 3, raw[y * (width + 1) + 1 + x]! * 3 + 3);
  }
  return { width, height, rgb, colours: plte.length / 3 };
}

/** RGB pixels, and their scanlines using each of the five filters in turn (as encoders that choose per line do). */
type Pixel = (x: number, y: number) => [number, number, number];
function filtered(width: number, height: number, pixel: Pixel): { raw: Buffer; rgb: Buffer } {
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgb.set(pixel(x, y), (y * width + x) * 3);
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    const f = y % 5;
    raw[y * (stride + 1)] = f;
    for (let x = 0; x < stride; x++) {
      const v = rgb[y * stride + x]!;
      const a = x >= 3 ? rgb[y * stride + x - 3]! : 0;
      const b = y > 0 ? rgb[(y - 1) * stride + x]! : 0;
      const c = x >= 3 && y > 0 ? rgb[(y - 1) * stride + x - 3]! : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const predicted = [0, a, b, (a + b) >> 1, paeth][f]!;
      raw[y * (stride + 1) + 1 + x] = (v - predicted) & 0xff;
    }
  }
  return { raw, rgb };
}

it('decodes every scanline filter back to the exact pixels', () => {
  const { raw, rgb } = filtered(37, 23, (x, y) => [(x * 7 + y * 3) & 0xff, (x * y) & 0xff, (255 - x * 5) & 0xff]);
  expect(unfilter(raw, 37, 23, 3)).toEqual(rgb);
  expect(decodePng(encodePng({ width: 37, height: 23, pixels: rgb }))).toEqual({ width: 37, height: 23, rgb });
});

it('keeps a picture of at most 256 colours exactly', () => {
  const { rgb } = filtered(64, 40, (x, y) => [(x >> 3) * 32, (y >> 2) * 25, ((x + y) % 2) * 255]);
  const out = readIndexed(palettePng(encodePng({ width: 64, height: 40, pixels: rgb })));
  expect(out.rgb.equals(rgb)).toBe(true);
  expect(out.colours).toBeLessThanOrEqual(256);
});

it('draws colours beyond the palette with their nearest entry, and is smaller', () => {
  const source = gradientPng(256, [16, 163, 127], [200, 40, 90]);
  const { rgb } = decodePng(source);
  const out = readIndexed(palettePng(source));
  expect(out.colours).toBe(256);
  let worst = 0;
  for (let i = 0; i < rgb.length; i++) worst = Math.max(worst, Math.abs(rgb[i]! - out.rgb[i]!));
  expect(worst).toBeLessThan(24);
  expect(palettePng(source).length).toBeLessThan(source.length);
});
