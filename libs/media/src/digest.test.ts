import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sha256Hex } from './digest';
import { HeadPeek } from './head-peek';

describe('sha256Hex', () => {
  it('is the SHA-256 of the bytes in hex (FIPS 180-2 test vector)', () => {
    expect(sha256Hex(Buffer.from('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('gives what HeadPeek gives of the same bytes streamed in chunks', async () => {
    const bytes = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31) & 255));
    const peek = new HeadPeek(4096, () => undefined);
    const chunks = [bytes.subarray(0, 10), bytes.subarray(10, 5000), bytes.subarray(5000)];
    await pipeline(Readable.from(chunks), peek, async (source: AsyncIterable<Buffer>) => {
      for await (const _ of source);
    });
    expect(peek.digest()).toBe(sha256Hex(bytes));
  });
});
