import { inflateSync } from 'node:zlib';
import type { AppError } from '@gensvc/errors';
import { checkMediaLimits } from './limits';
import { sampleMedia as sample } from '@gensvc/testing';
import { sniffMedia } from './sniff';

const sniff = (b: Buffer) => sniffMedia(b, true);

function limitError(b: Buffer): AppError | null {
  const m = sniff(b);
  if (!m) throw new Error('not sniffed');
  try {
    checkMediaLimits(m);
    return null;
  } catch (e) {
    return e as AppError;
  }
}

describe('sniffMedia: type from the bytes', () => {
  it.each([
    ['png', sample.png(3, 2), 'image/png', 'image', { width: 3, height: 2 }],
    ['jpeg', sample.jpeg(17, 9), 'image/jpeg', 'image', { width: 17, height: 9 }],
    [
      'jpeg after a 150 KB EXIF block',
      sample.jpeg(640, 480, 150_000),
      'image/jpeg',
      'image',
      { width: 640, height: 480 },
    ],
    ['gif', sample.gif(5, 4), 'image/gif', 'image', { width: 5, height: 4 }],
    ['webp lossless', sample.webp(33, 7), 'image/webp', 'image', { width: 33, height: 7 }],
    ['webp extended', sample.webp(40, 20, 'VP8X'), 'image/webp', 'image', { width: 40, height: 20 }],
    ['webp lossy', sample.webpLossyHeader(300, 200), 'image/webp', 'image', { width: 300, height: 200 }],
    ['wav', sample.wav(2), 'audio/wav', 'audio', { durationSeconds: 2 }],
    ['mp3', sample.mp3(4), 'audio/mpeg', 'audio', {}],
    ['mp3 with ID3', sample.mp3(3, true), 'audio/mpeg', 'audio', {}],
    ['mp4 video', sample.mp4({ durationSeconds: 12.5 }), 'video/mp4', 'video', { durationSeconds: 12.5 }],
    [
      'mp4 audio by brand',
      sample.mp4({ majorBrand: 'M4A ', compatibleBrands: ['M4A ', 'mp42', 'isom'], tracks: ['soun'] }),
      'audio/mp4',
      'audio',
      { durationSeconds: 5 },
    ],
    [
      'mp4 with only a sound track',
      sample.mp4({ tracks: ['soun'], durationSeconds: 30 }),
      'audio/mp4',
      'audio',
      { durationSeconds: 30 },
    ],
    ['mp4 with sound and video', sample.mp4({ tracks: ['soun', 'vide'] }), 'video/mp4', 'video', {}],
    [
      'mp4 with moov at the end',
      sample.mp4({ moovAtEnd: true, mdatBytes: 300_000, durationSeconds: 9999 }),
      'video/mp4',
      'video',
      {},
    ],
    ['webm video', sample.webm({ durationSeconds: 42 }), 'video/webm', 'video', { durationSeconds: 42 }],
    [
      'webm audio only',
      sample.webm({ tracks: [2], durationSeconds: 90 }),
      'audio/webm',
      'audio',
      { durationSeconds: 90 },
    ],
    ['pdf', sample.pdf(), 'application/pdf', 'document', {}],
  ])('%s', (_name, bytes, contentType, kind, fields) => {
    // As the upload sees it: the first 256 KiB only.
    const m = sniffMedia(bytes.subarray(0, 256 * 1024), bytes.length <= 256 * 1024);
    expect(m).toMatchObject({ contentType, kind, ...fields });
  });

  it('builds samples that decode: the PNG inflates to its scanlines, the PDF xref points at its objects', () => {
    const p = sample.png(4, 3);
    const idatLength = p.readUInt32BE(33);
    expect(inflateSync(p.subarray(41, 41 + idatLength)).length).toBe((4 + 1) * 3);
    const doc = sample.pdf().toString('latin1');
    const xref = Number(/startxref\n(\d+)/.exec(doc)![1]);
    expect(doc.slice(xref, xref + 4)).toBe('xref');
    const first = Number(/0000000000 65535 f \n(\d{10})/.exec(doc)![1]);
    expect(doc.slice(first, first + 7)).toBe('1 0 obj');
  });

  it.each([
    ['plain text', Buffer.from('hello, this is text\n')],
    ['HTML', Buffer.from('<!doctype html><script>alert(1)</script>')],
    ['SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>')],
    ['a ZIP', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0])],
    ['an ELF binary', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])],
    [
      'HEIC (ISO-BMFF but not MP4)',
      Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic\0\0\0\0mif1heic', 'latin1')]),
    ],
    ['AVIF', sample.mp4({ majorBrand: 'avif', compatibleBrands: ['avif', 'mif1', 'miaf'] })],
    ['QuickTime', sample.mp4({ majorBrand: 'qt  ', compatibleBrands: ['qt  '] })],
    ['Matroska (not WebM)', sample.webm({ docType: 'matroska' })],
    [
      'AAC ADTS (sync word, layer 0)',
      Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]), Buffer.alloc(100)]),
    ],
    [
      'a lone MP3 sync word followed by junk',
      Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x00]), Buffer.alloc(413), Buffer.from('not a frame')]),
    ],
    [
      'a RIFF that is neither WAVE nor WEBP',
      Buffer.concat([Buffer.from('RIFF\x10\0\0\0AVI LIST', 'latin1'), Buffer.alloc(8)]),
    ],
    ['empty', Buffer.alloc(0)],
    // Starts like an image but stops before its header says how large it is, or says 0 pixels.
    ['a 6-byte GIF (the magic number only)', Buffer.from('GIF89a', 'latin1')],
    ['a GIF cut inside its logical screen descriptor', sample.gif(5, 4).subarray(0, 12)],
    ['a GIF of 0×4 pixels', Buffer.concat([Buffer.from('GIF89a', 'latin1'), Buffer.from([0, 0, 4, 0, 0, 0, 0])])],
    ['a PNG cut before its size', sample.png(3, 2).subarray(0, 20)],
    [
      'a PNG of 0×2 pixels',
      (() => {
        const b = Buffer.from(sample.png(3, 2));
        b.writeUInt32BE(0, 16);
        return b;
      })(),
    ],
    ['a JPEG with no frame header', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xd9])],
    ['the 3 bytes a JPEG starts with', Buffer.from([0xff, 0xd8, 0xff])],
    ['an extended WebP cut before its size', sample.webp(40, 20, 'VP8X').subarray(0, 24)],
  ])('refuses %s', (_name, bytes) => {
    expect(sniff(bytes)).toBeNull();
  });
});

describe('checkMediaLimits: header limits of spec §8', () => {
  it('accepts 8192 pixels per side and refuses 8193 for every image format', () => {
    for (const make of [
      sample.png,
      (w: number, h: number) => sample.jpeg(w, h),
      sample.gif,
      (w: number, h: number) => sample.webp(w, h, 'VP8X'),
    ]) {
      expect(limitError(make(8192, 8))).toBeNull();
      const e = limitError(make(8193, 8));
      expect(e).toMatchObject({ status: 400, code: 'media_limit_exceeded', param: 'file' });
      expect(e!.message).toMatch(/8193×8 pixels.*at most 8192 pixels per side/);
      expect(limitError(make(8, 8193))?.code).toBe('media_limit_exceeded');
    }
    expect(limitError(sample.webp(8193, 2))?.code).toBe('media_limit_exceeded');
    expect(limitError(sample.webpLossyHeader(9000, 10))?.code).toBe('media_limit_exceeded');
  });

  it('audio: at most 60 minutes where the container says', () => {
    expect(limitError(sample.wav(3600, 100))).toBeNull();
    expect(limitError(sample.wav(3601, 100))?.message).toMatch(
      /audio lasts 60 minutes; audio may last at most 60 minutes/,
    );
    expect(limitError(sample.wav(61 * 60, 100))?.message).toMatch(/audio lasts 61 minutes/);
    expect(limitError(sample.mp4({ tracks: ['soun'], durationSeconds: 3601 }))?.code).toBe('media_limit_exceeded');
    expect(limitError(sample.webm({ tracks: [2], durationSeconds: 3700 }))?.code).toBe('media_limit_exceeded');
    expect(limitError(sample.mp4({ tracks: ['soun'], durationSeconds: 3599 }))).toBeNull();
  });

  it('video: at most 10 minutes where the container says; a late moov is accepted', () => {
    expect(limitError(sample.mp4({ durationSeconds: 600 }))).toBeNull();
    expect(limitError(sample.mp4({ durationSeconds: 601 }))?.message).toMatch(
      /video lasts 10 minutes; video may last at most 10 minutes/,
    );
    expect(limitError(sample.webm({ durationSeconds: 11 * 60 }))?.message).toMatch(/video lasts 11 minutes/);
    const late = sample.mp4({ moovAtEnd: true, mdatBytes: 300_000, durationSeconds: 3600 });
    const m = sniffMedia(late.subarray(0, 256 * 1024), false)!;
    expect(m.durationSeconds).toBeUndefined();
    expect(() => checkMediaLimits(m)).not.toThrow();
  });
});
