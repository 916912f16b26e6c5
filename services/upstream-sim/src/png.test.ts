// The PNG writer makes files a strict reader (and zlib) accepts, and the reader catches corruption.
import { inflateSync } from 'node:zlib';
import { encodePng } from '@gensvc/media';
import { sampleMedia } from '@gensvc/testing';
import { editedImagePng } from './deterministic';
import { pngInfo, sniffImageType } from './png';

describe('png', () => {
  it('round-trips exact pixels', () => {
    const rgb = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    const info = pngInfo(encodePng({ width: 3, height: 2, pixels: rgb }));
    expect(info).toMatchObject({ width: 3, height: 2, bitDepth: 8, colorType: 2 });
    expect(info.rgbAt(0, 0)).toEqual([255, 0, 0]);
    expect(info.rgbAt(2, 0)).toEqual([0, 0, 255]);
    expect(info.rgbAt(1, 1)).toEqual([40, 50, 60]);
  });

  it('detects a flipped byte through the chunk CRC, and truncation', () => {
    const png = editedImagePng({ prompt: 'p', images: [], index: 0, size: '256x256' });
    const flipped = Buffer.from(png);
    flipped[60] = flipped[60]! ^ 0xff;
    expect(() => pngInfo(flipped)).toThrow(/CRC/);
    expect(() => pngInfo(png.subarray(0, png.length - 5))).toThrow();
    expect(() => pngInfo(Buffer.from('GIF89a...'))).toThrow(/signature/);
  });

  it('edited images are an 8x8 grid whose colours depend on prompt, inputs and index', () => {
    const a = editedImagePng({ prompt: 'p', images: [Buffer.from('x')], index: 0, size: '512x512' });
    const info = pngInfo(a);
    expect(info.rgbAt(0, 0)).toEqual(info.rgbAt(63, 63));
    expect(inflateSync(a.subarray(33 + 8, a.length - 12 - 4)).length).toBeGreaterThan(0);
    expect(a.equals(editedImagePng({ prompt: 'p', images: [Buffer.from('x')], index: 0, size: '512x512' }))).toBe(true);
    for (const other of [
      { prompt: 'q', images: [Buffer.from('x')], index: 0 },
      { prompt: 'p', images: [Buffer.from('y')], index: 0 },
      { prompt: 'p', images: [Buffer.from('x')], index: 1 },
    ]) {
      expect(editedImagePng({ ...other, size: '512x512' }).equals(a)).toBe(false);
    }
  });

  it('sniffs image types from magic bytes', () => {
    expect(sniffImageType(encodePng({ width: 1, height: 1, pixels: Buffer.alloc(3) }))).toBe('image/png');
    expect(sniffImageType(sampleMedia.jpeg(4, 3))).toBe('image/jpeg');
    expect(sniffImageType(sampleMedia.webp(4, 3, 'VP8X'))).toBe('image/webp');
    expect(sniffImageType(sampleMedia.gif(4, 3))).toBe('image/gif');
    // Magic numbers without the size are no image a provider could decode.
    expect(sniffImageType(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBeNull();
    expect(sniffImageType(Buffer.from('GIF89a'))).toBeNull();
    expect(sniffImageType(Buffer.from('%PDF-1.7'))).toBeNull();
  });
});
