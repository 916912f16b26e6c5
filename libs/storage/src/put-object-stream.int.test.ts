// putObjectStream and putObjectBuffer against a real S3 (s3rver): a body of known length up to a part size goes as one
// streamed PutObject, bytes held whole as one PutObject of that buffer, and a body that fails mid-way leaves no object
// behind, on either path; the direct put's SigV4 signature is checked on the wire; the buffered path's part buffers
// come from a bounded pool that uploads beyond it wait for, and every buffer goes back whatever happens.
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { useTestContext } from '@gensvc/testing';
import { putObjectBuffer, putObjectStream } from './objects';
import { PartBufferPool, UPLOAD_PART_SIZE } from './part-buffers';
import { createS3 } from './s3';

const ctx = useTestContext();
const bucket = () => ctx.env.S3_BUCKET!;

/**
 * The S3 client with every request it sends noted by operation (the test's own reads aside), "streamed" when its
 * body is the caller's stream itself, "buffer" when it is one buffer (putObjectBuffer's, or a part buffer's). Noted at
 * the client's request handler, which both the SDK's commands and the direct put (direct-put.ts) send through.
 */
function counted(s3: S3Client): { s3: S3Client; commands: string[] } {
  const commands: string[] = [];
  const handler = s3.config.requestHandler as { handle(request: HttpRequestLike, options?: unknown): Promise<unknown> };
  const handle = handler.handle.bind(handler);
  handler.handle = (request, options) => {
    const name = operationOf(request);
    if (name !== 'GetObject') commands.push(`${name}${request.body instanceof Readable ? ' streamed' : ''}${Buffer.isBuffer(request.body) ? ' buffer' : ''}`);
    return handle(request, options);
  };
  return { s3, commands };
}

interface HttpRequestLike {
  method: string;
  query?: Record<string, unknown>;
  body?: unknown;
}

/** The S3 operation a request is, by method and query (those this file's puts send). */
function operationOf(request: HttpRequestLike): string {
  const q = request.query ?? {};
  if (request.method === 'GET') return 'GetObject';
  if (request.method === 'DELETE') return 'uploadId' in q ? 'AbortMultipartUpload' : 'DeleteObject';
  if (request.method === 'POST') return 'uploadId' in q ? 'CompleteMultipartUpload' : 'CreateMultipartUpload';
  return 'partNumber' in q ? 'UploadPart' : 'PutObject';
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

/** A body that yields `chunks` then, if `fail`, errors instead of ending. */
function body(chunks: Buffer[], fail?: Error): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i < chunks.length) setTimeout(() => this.push(chunks[i++]), 5);
      else if (fail) setTimeout(() => this.destroy(fail), 20);
      else this.push(null);
    },
  });
}

function bytesOf(n: number, seed: number): Buffer {
  const bytes = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed) % 251;
  return bytes;
}

describe('putObjectStream', () => {
  let client: { s3: S3Client; commands: string[] };
  beforeAll(() => {
    client = counted(ctx.s3);
  });

  it('puts a body of known length as one streamed PutObject, bytes and headers intact', async () => {
    const chunks = [bytesOf(70_000, 1), bytesOf(50_000, 2), bytesOf(3, 3)];
    const whole = Buffer.concat(chunks);
    const before = client.commands.length;
    await putObjectStream(client.s3, { bucket: bucket(), key: 'put/known.png', body: body(chunks), contentType: 'image/png', contentLength: whole.length, contentDisposition: 'inline' });
    expect(client.commands.slice(before)).toEqual(['PutObject streamed']);
    expect(await objectBytes('put/known.png')).toEqual(whole);
    const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'put/known.png' }));
    expect(head).toMatchObject({ ContentType: 'image/png', ContentLength: whole.length, ContentDisposition: 'inline' });
  });

  it('the streamed put is signed with SigV4 as AWS documents it, over what is sent; S3 errors keep their names', async () => {
    // s3rver does not check SigV4 signatures: a local endpoint checks them here, computed from the request as it
    // arrived (AWS's "Create a signed AWS API request" steps, S3's unnormalized path and unsigned payload).
    const secret = 'test-secret-key';
    const stored = new Map<string, Buffer>();
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const ok = sigV4Matches(req, 'test-key', secret, 'us-east-1');
        if (ok) stored.set(req.url!, Buffer.concat(parts));
        res.statusCode = ok ? 200 : 403;
        res.end(ok ? '' : '<?xml version="1.0"?><Error><Code>SignatureDoesNotMatch</Code><Message>no match</Message></Error>');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const settings = { ...ctx.config.s3, endpoint, region: 'us-east-1', forcePathStyle: true, accessKeyId: 'test-key' };
      const key = "put/a b+c(1)!'*~.png";
      const bytes = bytesOf(10_000, 9);
      await putObjectStream(createS3({ ...settings, secretAccessKey: secret }), { bucket: 'b1', key, body: body([bytes]), contentType: 'image/png', contentLength: bytes.length });
      expect([...stored.keys()]).toEqual(["/b1/put/a%20b%2Bc%281%29%21%27%2A~.png"]);
      expect(stored.get("/b1/put/a%20b%2Bc%281%29%21%27%2A~.png")).toEqual(bytes);
      const wrong = putObjectStream(createS3({ ...settings, secretAccessKey: 'not-the-secret' }), { bucket: 'b1', key: 'put/refused.png', body: body([bytes]), contentType: 'image/png', contentLength: bytes.length });
      await expect(wrong).rejects.toMatchObject({ name: 'SignatureDoesNotMatch', message: 'no match', $metadata: { httpStatusCode: 403 } });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    // And against s3rver: a key with characters to escape round-trips, a missing bucket is NoSuchBucket.
    const key = "put/a b+c(1)!'*~.png";
    const bytes = bytesOf(10_000, 10);
    await putObjectStream(client.s3, { bucket: bucket(), key, body: body([bytes]), contentType: 'image/png', contentLength: bytes.length });
    expect(await objectBytes(key)).toEqual(bytes);
    const missing = putObjectStream(client.s3, { bucket: 'no-such-bucket-here', key: 'put/x.png', body: body([bytes]), contentType: 'image/png', contentLength: bytes.length });
    await expect(missing).rejects.toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
  });

  it('signs with the credentials the provider gives now: a session token is sent and signed, new credentials sign anew', async () => {
    const seen: { token: string | undefined; signed: string[]; ok: boolean }[] = [];
    let current = { accessKeyId: 'key-1', secretAccessKey: 'secret-1', sessionToken: 'token-1' };
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const ok = sigV4Matches(req, current.accessKeyId, current.secretAccessKey, 'us-east-1');
        seen.push({ token: req.headers['x-amz-security-token'] as string | undefined, signed: /SignedHeaders=([^,]+)/.exec(req.headers.authorization ?? '')![1]!.split(';'), ok });
        res.statusCode = ok ? 200 : 403;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const s3 = new S3Client({
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      // Expiring within the SDK's refresh window, so its memoised provider asks again for every request.
      credentials: async () => ({ ...current, expiration: new Date(Date.now() + 60_000) }),
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    try {
      const put = () => putObjectBuffer(s3, { bucket: 'b1', key: 'put/token.png', body: bytesOf(100, 1), contentType: 'image/png' });
      await put();
      current = { accessKeyId: 'key-2', secretAccessKey: 'secret-2', sessionToken: 'token-2' };
      await put();
      expect(seen.map(({ token, ok }) => ({ token, ok }))).toEqual([
        { token: 'token-1', ok: true },
        { token: 'token-2', ok: true },
      ]);
      expect(seen[0]!.signed).toEqual(['content-length', 'content-type', 'host', 'x-amz-content-sha256', 'x-amz-date', 'x-amz-security-token']);
    } finally {
      s3.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a body of known length that fails mid-way rejects with its error and leaves no object', async () => {
    const before = client.commands.length;
    const boom = new Error('source cut off');
    const chunks = [bytesOf(64_000, 4), bytesOf(64_000, 5)];
    const put = putObjectStream(client.s3, { bucket: bucket(), key: 'put/cut.png', body: body(chunks, boom), contentType: 'image/png', contentLength: 500_000 });
    await expect(put).rejects.toBe(boom);
    // The request was cut before the declared length; s3rver keeps what arrived, so the put removed it.
    expect(client.commands.slice(before)).toEqual(['PutObject streamed', 'DeleteObject']);
    expect(await objectBytes('put/cut.png')).toBeNull();
  });

  it('a body of known length that ends short, or is closed early without an error, rejects at once', async () => {
    // A pipe passes on neither an end short of the declared length nor a destroy() without an error: without the
    // counter the request would wait for the declared length, with no timeout (this test then times out). Whether
    // s3rver keeps the bytes is not asserted here: it writes the cut request's bytes when it sees the connection
    // close, which can come after the put's delete (S3 and MinIO store nothing of a cut-off PUT).
    const short = putObjectStream(client.s3, { bucket: bucket(), key: 'put/short.png', body: body([bytesOf(64_000, 7)]), contentType: 'image/png', contentLength: 500_000 });
    await expect(short).rejects.toThrow('the body ended at 64000 of its declared 500000 bytes');
    const source = new Readable({ read() {} });
    source.push(bytesOf(64_000, 8));
    setTimeout(() => source.destroy(), 50);
    const closed = putObjectStream(client.s3, { bucket: bucket(), key: 'put/closed.png', body: source, contentType: 'image/png', contentLength: 500_000 });
    await expect(closed).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  }, 15_000);

  it('a length over a part size, or none, goes through the multipart-capable upload (buffered parts)', async () => {
    // The multipart path itself (parts, abort) is the archiver's and the edge's upload tests'; here only the choice.
    const small = bytesOf(1000, 6);
    const before = client.commands.length;
    await putObjectStream(client.s3, { bucket: bucket(), key: 'put/unknown.png', body: body([small]), contentType: 'image/png' });
    expect(await objectBytes('put/unknown.png')).toEqual(small);
    // A declared length is not trusted past a part size: the Upload takes the body as it comes.
    await putObjectStream(client.s3, { bucket: bucket(), key: 'put/declared-big.png', body: body([small]), contentType: 'image/png', contentLength: UPLOAD_PART_SIZE + 1 });
    expect(await objectBytes('put/declared-big.png')).toEqual(small);
    expect(client.commands.slice(before)).toEqual(['PutObject buffer', 'PutObject buffer']);
  });
});

describe('putObjectBuffer', () => {
  let client: { s3: S3Client; commands: string[] };
  beforeAll(() => {
    client = counted(ctx.s3);
  });

  it('puts bytes held whole as one PutObject of the buffer itself, bytes and headers intact', async () => {
    const bytes = bytesOf(123_457, 13);
    const before = client.commands.length;
    await putObjectBuffer(client.s3, { bucket: bucket(), key: 'put/whole.png', body: bytes, contentType: 'image/png', contentDisposition: 'inline' });
    expect(client.commands.slice(before)).toEqual(['PutObject buffer']);
    expect(await objectBytes('put/whole.png')).toEqual(bytes);
    const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'put/whole.png' }));
    expect(head).toMatchObject({ ContentType: 'image/png', ContentLength: bytes.length, ContentDisposition: 'inline' });
    await putObjectBuffer(client.s3, { bucket: bucket(), key: 'put/empty.png', body: Buffer.alloc(0), contentType: 'image/png' });
    expect(await objectBytes('put/empty.png')).toEqual(Buffer.alloc(0));
  });

  it('a refused put rejects with S3\'s error by name and deletes the key', async () => {
    const before = client.commands.length;
    const missing = putObjectBuffer(client.s3, { bucket: 'no-such-bucket-here', key: 'put/x.png', body: bytesOf(10, 1), contentType: 'image/png' });
    await expect(missing).rejects.toMatchObject({ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } });
    expect(client.commands.slice(before)).toEqual(['PutObject buffer', 'DeleteObject']);
  });
});

/**
 * A pool whose every lend and return is checked against the buffers held at that moment: a buffer lent while another
 * upload holds it fails the test. Notes the most buffers held at once.
 */
function watchedPool(capacity: number): PartBufferPool & { most: number; doubleLent: number } {
  const pool = new PartBufferPool(capacity) as PartBufferPool & { most: number; doubleLent: number };
  pool.most = 0;
  pool.doubleLent = 0;
  const held = new Set<Buffer>();
  const acquire = pool.acquire.bind(pool);
  pool.acquire = async (signal) => {
    const buffer = await acquire(signal);
    if (held.has(buffer)) pool.doubleLent++;
    held.add(buffer);
    pool.most = Math.max(pool.most, held.size);
    return buffer;
  };
  for (const name of ['release', 'discard'] as const) {
    const giveBack = pool[name].bind(pool);
    pool[name] = (buffer) => {
      held.delete(buffer);
      giveBack(buffer);
    };
  }
  return pool;
}

describe('putObjectStream part buffers', () => {
  const MiB = 1024 * 1024;
  /** `total` bytes in chunks of 256 KiB, one per timer turn: a client's socket. */
  function slowBody(whole: Buffer, fail?: { after: number; error: Error }): Readable {
    let at = 0;
    return new Readable({
      read() {
        setTimeout(() => {
          if (fail && at >= fail.after) return this.destroy(fail.error);
          if (at >= whole.length) return this.push(null);
          const end = Math.min(at + 256 * 1024, whole.length);
          this.push(whole.subarray(at, end));
          at = end;
        }, 1);
      },
    });
  }

  it('uploads beyond the pool wait for a buffer and all complete, bytes intact, no buffer lent twice', async () => {
    const pool = watchedPool(4);
    const bodies = Array.from({ length: 5 }, (_, i) => bytesOf(2 * UPLOAD_PART_SIZE + 1 * MiB + i, 20 + i));
    let waited = 0;
    const watch = setInterval(() => (waited = Math.max(waited, pool.waiting)), 1);
    try {
      await Promise.all(bodies.map((b, i) => putObjectStream(ctx.s3, { bucket: bucket(), key: `pool/${i}.bin`, body: slowBody(b), contentType: 'application/octet-stream', partBuffers: pool })));
    } finally {
      clearInterval(watch);
    }
    expect(waited).toBeGreaterThan(0);
    expect(pool.most).toBe(4);
    expect(pool.doubleLent).toBe(0);
    expect(pool.inUse).toBe(0);
    for (const [i, b] of bodies.entries()) expect((await objectBytes(`pool/${i}.bin`))?.equals(b)).toBe(true);
  }, 60_000);

  it('an upload whose body fails mid-part gives every buffer back, and leaves no object', async () => {
    const pool = watchedPool(3);
    const boom = new Error('client gone');
    // One part sent (or in flight), the second filling when the body fails.
    const put = putObjectStream(ctx.s3, { bucket: bucket(), key: 'pool/cut.bin', body: slowBody(bytesOf(3 * UPLOAD_PART_SIZE, 9), { after: UPLOAD_PART_SIZE + 2 * MiB, error: boom }), contentType: 'application/octet-stream', partBuffers: pool });
    await expect(put).rejects.toBe(boom);
    expect(pool.inUse).toBe(0);
    expect(pool.waiting).toBe(0);
    expect(await objectBytes('pool/cut.bin')).toBeNull();
    // All three come back usable: an upload needing them all runs.
    const whole = bytesOf(2 * UPLOAD_PART_SIZE + 5, 10);
    await putObjectStream(ctx.s3, { bucket: bucket(), key: 'pool/after-cut.bin', body: slowBody(whole), contentType: 'application/octet-stream', partBuffers: pool });
    expect((await objectBytes('pool/after-cut.bin'))?.equals(whole)).toBe(true);
    expect(pool.doubleLent).toBe(0);
    expect(pool.inUse).toBe(0);
  }, 60_000);

  it('an upload waiting for a buffer whose body fails stops waiting at once and takes none', async () => {
    const pool = watchedPool(1);
    const holder = await pool.acquire();
    const boom = new Error('client gone while waiting');
    const source = new Readable({ read() {} });
    source.push(bytesOf(1000, 11));
    const put = putObjectStream(ctx.s3, { bucket: bucket(), key: 'pool/waiting.bin', body: source, contentType: 'application/octet-stream', partBuffers: pool });
    await new Promise((r) => setTimeout(r, 50));
    expect(pool.waiting).toBe(1);
    source.destroy(boom);
    await expect(put).rejects.toBe(boom);
    expect(pool.waiting).toBe(0);
    expect(pool.inUse).toBe(1);
    pool.release(holder);
    expect(await objectBytes('pool/waiting.bin')).toBeNull();
  });

  it('a body under a part size goes as one PutObject of its buffer, which goes back', async () => {
    const pool = watchedPool(1);
    const small = bytesOf(300_000, 12);
    await putObjectStream(ctx.s3, { bucket: bucket(), key: 'pool/small.bin', body: slowBody(small), contentType: 'application/octet-stream', partBuffers: pool });
    expect(await objectBytes('pool/small.bin')).toEqual(small);
    await putObjectStream(ctx.s3, { bucket: bucket(), key: 'pool/empty.bin', body: Readable.from([]), contentType: 'application/octet-stream', partBuffers: pool });
    expect(await objectBytes('pool/empty.bin')).toEqual(Buffer.alloc(0));
    expect(pool.inUse).toBe(0);
  });
});

/**
 * Whether `req` carries a valid AWS Signature Version 4 Authorization header for these credentials, computed as AWS
 * documents it: the canonical request (S3 signs the path as sent, without normalizing or encoding it again), the
 * string to sign over its SHA-256, and the HMAC chain of date, region, service and "aws4_request".
 */
function sigV4Matches(req: IncomingMessage, accessKeyId: string, secret: string, region: string): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(req.headers.authorization ?? '');
  if (!auth || auth[1] !== accessKeyId || auth[3] !== region) return false;
  const [, , date, , signedHeaders, signature] = auth;
  const amzDate = String(req.headers['x-amz-date']);
  const [path, query = ''] = req.url!.split('?');
  const canonicalQuery = query.split('&').filter(Boolean).sort().map((p) => (p.includes('=') ? p : `${p}=`)).join('&');
  const headers = signedHeaders!.split(';').map((h) => `${h}:${String(req.headers[h]).trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [req.method, path, canonicalQuery, headers, signedHeaders, req.headers['x-amz-content-sha256']].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secret}`, date!), region), 's3'), 'aws4_request');
  return signedHeaders!.split(';').includes('host') && createHmac('sha256', signingKey).update(toSign).digest('hex') === signature;
}
