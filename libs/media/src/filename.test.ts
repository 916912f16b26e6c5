import { contentDisposition, sanitizeFilename } from './filename';

describe('filenames', () => {
  it.each([
    ['photo.png', ['png'], 'photo.png'],
    ['../../etc/passwd', ['png'], 'passwd.png'],
    ['C:\\Users\\me\\cat.JPG', ['jpg', 'jpeg'], 'cat.jpg'],
    ['evil.html', ['png'], 'evil.png'],
    ['archive.tar.gz', ['pdf'], 'archive.tar.pdf'],
    ['a"b\'c`d.pdf', ['pdf'], 'abcd.pdf'],
    ['line\r\nbreak\u0000.wav', ['wav'], 'linebreak.wav'],
    ['right\u202Egnp.exe', ['png'], 'rightgnp.png'],
    ['.hidden', ['gif'], 'hidden.gif'],
    ['', ['mp3'], 'file.mp3'],
    [undefined, ['mp4', 'm4v'], 'file.mp4'],
    ['...', ['webm'], 'file.webm'],
    ['Grüße 日本.webp', ['webp'], 'Grüße 日本.webp'],
    ['version 1.2 final', ['pdf'], 'version 1.2 final.pdf'],
  ])('%j → %j', (raw, exts, want) => {
    expect(sanitizeFilename(raw, exts)).toBe(want);
  });

  it('bounds the length in UTF-8 bytes and keeps the extension', () => {
    const name = sanitizeFilename(`${'ü'.repeat(300)}.png`, ['png']);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    expect(name.endsWith('ü.png')).toBe(true);
  });

  it('Content-Disposition carries an ASCII fallback and the exact name (RFC 6266)', () => {
    expect(contentDisposition('inline', 'plain.png')).toBe(`inline; filename="plain.png"; filename*=UTF-8''plain.png`);
    expect(contentDisposition('attachment', 'Grüße (1) 100%.pdf')).toBe(
      `attachment; filename="Gr__e (1) 100_.pdf"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%281%29%20100%25.pdf`,
    );
  });
});

describe('filenames: hostile names', () => {
  // Runs of dots and spaces that do not end the name: a trailing-trim regex retries from each position of the run.
  const shapes: [string, (n: number) => string][] = [
    ['a. . . b', (n) => `a${'. '.repeat(n)}b`],
    ['. . . ', (n) => '. '.repeat(n)],
    ['a. . . ', (n) => `a${'. '.repeat(n)}`],
    ['a . . .x.png', (n) => `a${' .'.repeat(n)}x.png`],
    ['a\u00a0.\u00a0.b', (n) => `a${'\u00a0.'.repeat(n)}b`],
  ];

  it.each(shapes)('trims a 100k-character %j in linear time', (_shape, build) => {
    const started = performance.now();
    const name = sanitizeFilename(build(50_000), ['png']);
    expect(performance.now() - started).toBeLessThan(1_000);
    // The stored name is bounded, so a short name of the same shape gives the same answer.
    expect(name).toBe(sanitizeFilename(build(500), ['png']));
  });
});
