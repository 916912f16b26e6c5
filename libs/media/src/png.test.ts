import { crc32, inflateSync } from 'node:zlib';
import { encodePng } from './png';
import { sniffMedia } from './sniff';

/** The chunks of a PNG, each checked against its CRC. */
function chunks(png: Buffer): { type: string; data: Buffer }[] {
  const out: { type: string; data: Buffer }[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const end = at + 8 + length;
    expect(crc32(png.subarray(at + 4, end))).toBe(png.readUInt32BE(end));
    out.push({ type: png.toString('latin1', at + 4, at + 8), data: png.subarray(at + 8, end) });
    at = end + 4;
  }
  return out;
}

describe('encodePng', () => {
  it('writes RGB pixels as unfiltered scanlines, every chunk CRC-checked', () => {
    const pixels = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    const png = encodePng({ width: 3, height: 2, pixels });
    expect(sniffMedia(png, true)).toMatchObject({ contentType: 'image/png', width: 3, height: 2 });
    const found = chunks(png);
    expect(found.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect([...found[0]!.data.subarray(8)]).toEqual([8, 2, 0, 0, 0]);
    const scanlines = inflateSync(found[1]!.data);
    const rows = [Buffer.from([0]), pixels.subarray(0, 9), Buffer.from([0]), pixels.subarray(9)];
    expect(scanlines).toEqual(Buffer.concat(rows));
  });

  it('writes greyscale, and indexed images with their palette', () => {
    const grey = chunks(encodePng({ width: 4, height: 1, pixels: Buffer.from([0, 1, 2, 3]), colour: 'grey' }));
    expect(grey[0]!.data[9]).toBe(0);
    const palette = Buffer.from([0, 0, 0, 255, 255, 255]);
    const pixels = Buffer.from([0, 1, 1, 0]);
    const indexed = chunks(encodePng({ width: 2, height: 2, pixels, colour: 'indexed', palette }));
    expect(indexed.map((c) => c.type)).toEqual(['IHDR', 'PLTE', 'IDAT', 'IEND']);
    expect(indexed[0]!.data[9]).toBe(3);
    expect(indexed[1]!.data).toEqual(palette);
  });

  it('refuses pixels of the wrong length, and a palette on a non-indexed image', () => {
    expect(() => encodePng({ width: 2, height: 2, pixels: Buffer.alloc(11) })).toThrow(RangeError);
    const rgbWithPalette = { width: 1, height: 1, pixels: Buffer.alloc(3), palette: Buffer.alloc(3) };
    expect(() => encodePng(rgbWithPalette)).toThrow(RangeError);
  });
});
