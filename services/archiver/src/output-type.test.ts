import { detectOutputType } from './output-type';

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const ftyp = (brand: string) => bytes([0, 0, 0, 0x18], 'ftyp', brand, [0, 0, 0, 0], brand, 'mp41');
// EBML header: magic, size, then EBMLVersion... DocType (0x4282), size 0x84 / 0x88, value.
const ebml = (docType: string) => bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x80 | docType.length], docType, [0x42, 0x87, 0x81, 0x04]);

describe('detectOutputType', () => {
  it.each([
    ['PNG', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'rest'), 'image/png'],
    ['JPEG', bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10], 'JFIF'), 'image/jpeg'],
    ['GIF', bytes('GIF87a', [1, 0, 1, 0]), 'image/gif'],
    ['WebP', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 '), 'image/webp'],
    ['MP4', ftyp('isom'), 'video/mp4'],
    ['MP4 (mp42)', ftyp('mp42'), 'video/mp4'],
    ['WebM', ebml('webm'), 'video/webm'],
  ])('recognises %s', (_name, head, contentType) => {
    expect(detectOutputType(head)?.contentType).toBe(contentType);
  });

  it.each([
    ['HTML', bytes('<!doctype html><html>')],
    ['JSON', bytes('{"error":"expired"}')],
    ['M4A audio', ftyp('M4A ')],
    ['HEIC', ftyp('heic')],
    ['Matroska', ebml('matroska')],
    ['WAV', bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt ')],
    ['PDF', bytes('%PDF-1.7')],
    ['empty', Buffer.alloc(0)],
    ['a truncated PNG signature', bytes([0x89, 0x50, 0x4e, 0x47])],
  ])('refuses %s', (_name, head) => {
    expect(detectOutputType(head)).toBeNull();
  });
});
