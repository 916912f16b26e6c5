// putObjectStream and putObjectBuffer against a real S3 (s3rver): bytes round-trip exactly (sha256) through one
// PutObject or a multipart upload, headers are kept, S3's errors keep their names, and a body that fails mid-way
// leaves no object and no multipart upload behind.
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { countS3Commands, sha256, useTestContext, type S3Counter } from '@gensvc/testing';
import { putObjectBuffer, putObjectStream } from './objects';
import { createS3 } from './s3';

const ctx = useTestContext();
const bucket = () => ctx.env.S3_BUCKET!;
const MiB = 1024 * 1024;
const PNG = 'image/png';
const BINARY = 'application/octet-stream';
/** Where a test puts: its key in the test bucket, with a content type. */
const to = (key: string, contentType = PNG) => ({ bucket: bucket(), key, contentType });

let s3: S3Client;
let counter: S3Counter;
beforeAll(() => {
  // A client of this file's own, so that only its commands are counted.
  s3 = createS3(ctx.config.s3);
  counter = countS3Commands(s3);
});
afterAll(() => s3.destroy());

/** The commands `fn` sent. */
async function commandsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const before = counter.commands.length;
  await fn();
  return counter.commands.slice(before);
}

async function objectBytes(key: string): Promise<Buffer | null> {
  try {
    const out = await ctx.s3.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return null;
    throw e;
  }
}

/** `whole` in chunks of 256 KiB, one per timer turn (a client's socket); errors instead at `fail.after` bytes. */
function body(whole: Buffer, fail?: { after: number; error?: Error }): Readable {
  let at = 0;
  return new Readable({
    read() {
      setTimeout(() => {
        if (fail && at >= fail.after) return void this.destroy(fail.error);
        if (at >= whole.length) return void this.push(null);
        const end = Math.min(at + 256 * 1024, whole.length);
        this.push(whole.subarray(at, end));
        at = end;
      }, 1);
    },
  });
}

function bytesOf(n: number, seed: number): Buffer {
  const bytes = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed) % 251;
  return bytes;
}

describe('putObjectStream', () => {
  it('puts a body within one part as one PutObject, bytes and headers intact', async () => {
    const whole = bytesOf(700_003, 1);
    const sent = await commandsOf(() =>
      putObjectStream(s3, { ...to('put/small.png'), body: body(whole), contentDisposition: 'inline' }),
    );
    expect(sent).toEqual(['PutObjectCommand']);
    expect(sha256((await objectBytes('put/small.png'))!)).toBe(sha256(whole));
    const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'put/small.png' }));
    expect(head).toMatchObject({ ContentType: 'image/png', ContentLength: whole.length, ContentDisposition: 'inline' });
    await putObjectStream(s3, { bucket: bucket(), key: 'put/empty.png', body: Readable.from([]), contentType: PNG });
    expect(await objectBytes('put/empty.png')).toEqual(Buffer.alloc(0));
  });

  it('puts a body over a part size as a multipart upload, bytes intact', async () => {
    const whole = bytesOf(2 * 5 * MiB + 123, 2);
    const put = () => putObjectStream(s3, { ...to('put/large.bin', BINARY), body: body(whole) });
    const parts = Array(3).fill('UploadPartCommand');
    expect(await commandsOf(put)).toEqual(['CreateMultipartUploadCommand', ...parts, 'CompleteMultipartUploadCommand']);
    expect(sha256((await objectBytes('put/large.bin'))!)).toBe(sha256(whole));
  }, 60_000);

  it('a key with characters to escape round-trips; a missing bucket is NoSuchBucket', async () => {
    const key = "put/a b+c(1)!'*~.png";
    const bytes = bytesOf(10_000, 3);
    await putObjectStream(s3, { bucket: bucket(), key, body: body(bytes), contentType: PNG });
    expect(await objectBytes(key)).toEqual(bytes);
    const missing = putObjectStream(s3, { ...to('put/x.png'), bucket: 'no-such-bucket-here', body: body(bytes) });
    await expect(missing).rejects.toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
  });

  it('a body that fails within its first part rejects with its error and sends nothing', async () => {
    const boom = new Error('source cut off');
    const before = counter.commands.length;
    const cut = body(bytesOf(500_000, 4), { after: 300_000, error: boom });
    const put = putObjectStream(s3, { bucket: bucket(), key: 'put/cut.png', body: cut, contentType: PNG });
    await expect(put).rejects.toBe(boom);
    expect(counter.commands.slice(before)).toEqual([]);
    expect(await objectBytes('put/cut.png')).toBeNull();
  });

  it('a body closed early without an error rejects, and nothing is stored', async () => {
    const source = new Readable({ read() {} });
    source.push(bytesOf(64_000, 5));
    setTimeout(() => source.destroy(), 50);
    const closed = putObjectStream(s3, { bucket: bucket(), key: 'put/closed.png', body: source, contentType: PNG });
    await expect(closed).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(await objectBytes('put/closed.png')).toBeNull();
  });

  it('a body that fails after its first part aborts the multipart upload: no object, never completed', async () => {
    const boom = new Error('client gone');
    const before = counter.commands.length;
    const put = putObjectStream(s3, {
      bucket: bucket(),
      key: 'put/cut.bin',
      body: body(bytesOf(3 * 5 * MiB, 6), { after: 5 * MiB + 2 * MiB, error: boom }),
      contentType: BINARY,
    });
    // S3 answers the abort and the put rejects with the body's error; s3rver does not implement
    // AbortMultipartUpload, and the put rejects with its MethodNotAllowed instead.
    await expect(put).rejects.toMatchObject({ name: expect.stringMatching(/^(Error|MethodNotAllowed)$/) });
    const sent = counter.commands.slice(before);
    expect(sent).toEqual(['CreateMultipartUploadCommand', 'UploadPartCommand', 'AbortMultipartUploadCommand']);
    expect(await objectBytes('put/cut.bin')).toBeNull();
  }, 60_000);
});

describe('putObjectBuffer', () => {
  it('puts bytes held whole as one PutObject, bytes and headers intact', async () => {
    const bytes = bytesOf(123_457, 13);
    const put = () => putObjectBuffer(s3, { ...to('put/whole.png'), body: bytes, contentDisposition: 'inline' });
    const sent = await commandsOf(put);
    expect(sent).toEqual(['PutObjectCommand']);
    expect(sha256((await objectBytes('put/whole.png'))!)).toBe(sha256(bytes));
    const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'put/whole.png' }));
    expect(head).toMatchObject({ ContentType: 'image/png', ContentLength: bytes.length, ContentDisposition: 'inline' });
    await putObjectBuffer(s3, { ...to('put/whole-empty.png'), body: Buffer.alloc(0) });
    expect(await objectBytes('put/whole-empty.png')).toEqual(Buffer.alloc(0));
  });

  it("a refused put rejects with S3's error by name and deletes the key", async () => {
    const before = counter.commands.length;
    const missing = putObjectBuffer(s3, { ...to('put/x.png'), bucket: 'no-such-bucket-here', body: bytesOf(10, 1) });
    await expect(missing).rejects.toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
    expect(counter.commands.slice(before)).toEqual(['PutObjectCommand', 'DeleteObjectCommand']);
  });
});
