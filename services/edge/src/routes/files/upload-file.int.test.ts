// Uploads over a real socket into real S3 (s3rver) and Postgres: every accepted type round-trips byte for byte
// through the content link and a presigned URL; every refusal leaves nothing behind in either store.
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createS3 } from '@gensvc/storage';
import {
  countS3Commands,
  eventually,
  jsonOf,
  makeKey,
  makeWorkspace,
  objectKeys,
  sampleMedia as sample,
  sha256,
  useTestContext,
  type S3Counter,
} from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer, upload } from './files-test-support';
import { MAX_UPLOAD_BYTES } from './schema';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let secret = '';
let workspaceId = '';
/** The edge's own S3 client, counted: a multipart upload left dangling lists no object, only its commands show it. */
let edgeS3: S3Client;
let sent: S3Counter;

beforeAll(async () => {
  edgeS3 = createS3(ctx.config.s3);
  sent = countS3Commands(edgeS3);
  edge = await startEdge(ctx, { s3: edgeS3 });
  // Team: signed delivery links are allowed. A generous upload rate: this file uploads more than 60 times a minute.
  const ws = await makeWorkspace(ctx.db, { tier: 'team' });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { uploadRpm: 10_000 } });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id, { scopes: ['files.write'] })).secret;
});
afterAll(async () => {
  await edge.close();
  edgeS3.destroy();
});

/** Objects in the bucket and File rows: what a refused upload must not change. */
const stores = async () => ({
  objects: (await objectKeys(ctx.s3, ctx.config.s3.bucket)).length,
  rows: await ctx.db.file.count(),
});

const cases: [string, Buffer, string][] = [
  ['png', sample.png(64, 48), 'image/png'],
  ['jpeg', sample.jpeg(120, 80, 20_000), 'image/jpeg'],
  ['gif', sample.gif(16, 16), 'image/gif'],
  ['webp', sample.webp(32, 32, 'VP8X'), 'image/webp'],
  ['mp4 video', sample.mp4({ durationSeconds: 30, mdatBytes: 10_000 }), 'video/mp4'],
  ['webm', sample.webm({ durationSeconds: 12 }), 'video/webm'],
  ['mp3', sample.mp3(20, true), 'audio/mpeg'],
  [
    'm4a',
    sample.mp4({ majorBrand: 'M4A ', compatibleBrands: ['M4A ', 'mp42', 'isom'], tracks: ['soun'] }),
    'audio/mp4',
  ],
  ['wav', sample.wav(1.5), 'audio/wav'],
  ['pdf', sample.pdf(), 'application/pdf'],
];

describe('upload round trips', () => {
  it.each(cases)('%s: upload → content link → presigned URL, byte-exact', async (_name, bytes, contentType) => {
    // The client's Content-Type and name lie; the bytes decide.
    const res = await upload(edge.url, secret, bytes, { filename: 'C:\\tmp\\my clip.txt', contentType: 'text/plain' });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      object: 'file',
      bytes: bytes.length,
      purpose: 'vision',
      content_type: contentType,
      source: 'upload',
    });
    expect(body.id).toMatch(/^file_[0-9A-Za-z]{22}$/);
    expect(body.filename).toMatch(/^my clip\.[a-z0-9]+$/);
    expect(body).not.toHaveProperty('archive_status');
    const created = Date.parse(body.created_at);
    expect(Math.abs(created - Date.now())).toBeLessThan(60_000);
    expect(Date.parse(body.expires_at) - created).toBe(30 * 86_400_000);
    expect(body.url).toMatch(
      new RegExp(`^${ctx.config.publicBaseUrl}/api/v1/files/${body.id}/content\\?token=[\\w-]+\\.[\\w-]+\\.[\\w-]+$`),
    );

    const row = await ctx.db.file.findUniqueOrThrow({ where: { id: body.id } });
    expect(row).toMatchObject({ workspaceId, sha256: sha256(bytes), contentType, bytes: BigInt(bytes.length) });
    const head = await ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: row.storageKey }));
    expect(head).toMatchObject({ ContentLength: bytes.length, ContentType: contentType });

    // The content link names the public base URL; the same path on the edge under test serves it.
    const content = await fetch(body.url.replace(ctx.config.publicBaseUrl, edge.url));
    expect(content.status).toBe(200);
    expect(content.headers.get('content-type')).toBe(contentType);
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
    expect(sha256(await content.arrayBuffer())).toBe(sha256(bytes));

    const signed = await fetch(`${edge.url}/api/v1/files/${body.id}/signed_url`, { headers: bearer(secret) });
    expect(signed.status).toBe(200);
    const { url } = await jsonOf(signed);
    const direct = await fetch(url);
    expect(direct.status).toBe(200);
    expect(sha256(await direct.arrayBuffer())).toBe(sha256(bytes));
  });

  it('accepts purpose after the file, and on /api/v1/files as on /v1/files', async () => {
    const bytes = sample.png(2, 2);
    for (const path of ['/v1/files', '/api/v1/files']) {
      const res = await upload(
        edge.url,
        secret,
        bytes,
        { purposeLast: true, purpose: 'input', filename: 'a.png' },
        path,
      );
      expect(res.status).toBe(200);
      expect(await jsonOf(res)).toMatchObject({ purpose: 'input', filename: 'a.png', content_type: 'image/png' });
    }
  });

  it('streams a multipart (25 MiB) upload: exactly 25 MiB is accepted and round-trips', async () => {
    const doc = sample.pdf();
    const bytes = Buffer.concat([doc, Buffer.alloc(MAX_UPLOAD_BYTES - doc.length, 0x20)]);
    expect(bytes.length).toBe(25 * 1024 * 1024);
    const res = await upload(edge.url, secret, bytes, { filename: 'big.pdf' });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    expect(body.bytes).toBe(MAX_UPLOAD_BYTES);
    const content = await fetch(body.url.replace(ctx.config.publicBaseUrl, edge.url));
    expect(sha256(await content.arrayBuffer())).toBe(sha256(bytes));
  }, 60_000);
});

describe('refusals leave nothing behind', () => {
  async function refused(bytes: Buffer, o: Parameters<typeof upload>[3], status: number, code: string, param?: string) {
    const before = await stores();
    const res = await upload(edge.url, secret, bytes, o);
    const body = await jsonOf(res);
    expect({ status: res.status, code: body.error?.code }).toEqual({ status, code });
    if (param !== undefined) expect(body.error.param).toBe(param);
    expect(await stores()).toEqual(before);
    return body.error.message as string;
  }

  it('one byte over 25 MiB → 413, no object, no row', async () => {
    const doc = sample.pdf();
    const bytes = Buffer.concat([doc, Buffer.alloc(MAX_UPLOAD_BYTES + 1 - doc.length, 0x20)]);
    const message = await refused(bytes, { filename: 'big.pdf' }, 413, 'payload_too_large');
    expect(message).toMatch(/25 MiB/);
  }, 60_000);

  it('a declared body far over the limit → 413 before it is read', async () => {
    const { request } = await import('node:http');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${edge.url}/v1/files`, {
        method: 'POST',
        headers: {
          ...bearer(secret),
          'content-type': 'multipart/form-data; boundary=x',
          'content-length': String(200 * 1024 * 1024),
        },
      });
      req.on('response', (r) => {
        let text = '';
        r.on('data', (d) => (text += d));
        r.on('end', () => resolve({ status: r.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.write('--x\r\n');
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
  });

  it('bytes of an unsupported type → 415 whatever the name and Content-Type claim', async () => {
    const html = Buffer.from('<!doctype html><html><script>alert(document.cookie)</script></html>');
    const message = await refused(
      html,
      { filename: 'cat.png', contentType: 'image/png' },
      415,
      'unsupported_media_type',
      'file',
    );
    expect(message).toMatch(/PNG, JPEG, WebP, GIF, MP4, WebM, MP3, MP4 audio \(M4A\), WAV, PDF/);
    await refused(Buffer.alloc(0), { filename: 'empty.png' }, 415, 'unsupported_media_type');
    await refused(
      sample.mp4({ majorBrand: 'heic', compatibleBrands: ['mif1', 'heic'] }),
      { filename: 'x.heic' },
      415,
      'unsupported_media_type',
    );
  });

  it('header limits → 400 naming the limit', async () => {
    expect(await refused(sample.png(8193, 1), { filename: 'wide.png' }, 400, 'media_limit_exceeded', 'file')).toMatch(
      /8192 pixels per side/,
    );
    expect(await refused(sample.jpeg(16, 9000), {}, 400, 'media_limit_exceeded')).toMatch(/16×9000/);
    expect(await refused(sample.gif(8200, 1), {}, 400, 'media_limit_exceeded')).toMatch(/8192/);
    expect(await refused(sample.webp(9000, 2), {}, 400, 'media_limit_exceeded')).toMatch(/8192/);
    // 61 minutes of real 8-bit mono audio at 1 kHz: 3.7 MB, so the limit, not the size, refuses it.
    expect(await refused(sample.wav(61 * 60, 1000), {}, 400, 'media_limit_exceeded')).toMatch(
      /audio may last at most 60 minutes/,
    );
    expect(await refused(sample.mp4({ durationSeconds: 11 * 60 }), {}, 400, 'media_limit_exceeded')).toMatch(
      /video may last at most 10 minutes/,
    );
    expect(await refused(sample.webm({ durationSeconds: 10 * 60 + 1 }), {}, 400, 'media_limit_exceeded')).toMatch(
      /10 minutes/,
    );
  });

  it('a bad purpose → 400, before or after the file (the stored bytes are removed again)', async () => {
    const bytes = sample.png(4, 4);
    expect(await refused(bytes, { purpose: 'training' }, 400, 'invalid_request', 'purpose')).toMatch(/vision, input/);
    await refused(bytes, { purpose: 'training', purposeLast: true }, 400, 'invalid_request', 'purpose');
    await refused(sample.pdf(), { purpose: 'x'.repeat(5000), purposeLast: true }, 400, 'invalid_request', 'purpose');
    await refused(bytes, { purpose: null }, 400, 'invalid_request', 'purpose');
  });

  it('a form without the file field, or with another field name → 400', async () => {
    await refused(sample.png(4, 4), { field: 'image' }, 400, 'invalid_request', 'image');
    const before = await stores();
    const form = new FormData();
    form.append('purpose', 'vision');
    const res = await fetch(`${edge.url}/v1/files`, { method: 'POST', headers: bearer(secret), body: form });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'invalid_request', param: 'file' });
    expect(await stores()).toEqual(before);
  });

  it('two files → 400; not multipart → 415; malformed multipart → 400', async () => {
    const before = await stores();
    const form = new FormData();
    form.append('purpose', 'vision');
    form.append('file', new Blob([sample.png(2, 2)]), 'a.png');
    form.append('file', new Blob([sample.png(2, 2)]), 'b.png');
    const two = await fetch(`${edge.url}/v1/files`, { method: 'POST', headers: bearer(secret), body: form });
    expect(two.status).toBe(400);
    expect(await stores()).toEqual(before);

    const json = await fetch(`${edge.url}/v1/files`, {
      method: 'POST',
      headers: { ...bearer(secret), 'content-type': 'application/json' },
      body: '{"file":"x"}',
    });
    expect(json.status).toBe(415);
    expect((await jsonOf(json)).error.code).toBe('unsupported_media_type');

    const cut =
      '--b\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nvision\r\n' +
      '--b\r\ncontent-disposition: form-data; name="file"; filename="a.png"\r\n\r\n' +
      sample.png(2, 2).toString('latin1');
    const broken = await fetch(`${edge.url}/v1/files`, {
      method: 'POST',
      headers: { ...bearer(secret), 'content-type': 'multipart/form-data; boundary=b' },
      body: Buffer.from(cut, 'latin1'),
    });
    expect(broken.status).toBe(400);
    expect((await jsonOf(broken)).error.code).toBe('invalid_request');
    expect(await stores()).toEqual(before);
  });

  it('a refused upload is read only up to a bound: a huge body gets its answer without being read whole', async () => {
    const before = await stores();
    const { request } = await import('node:http');
    let written = 0;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${edge.url}/v1/files`, {
        method: 'POST',
        headers: { ...bearer(secret), 'content-type': 'multipart/form-data; boundary=b' },
      });
      req.on('response', (r) => {
        let text = '';
        r.on('data', (d) => (text += d));
        r.on('end', () => resolve({ status: r.statusCode!, body: text }));
      });
      // The server cuts the connection once it has answered and lingered: an error after the answer is expected.
      req.on('error', (e) => setTimeout(() => reject(e), 1000));
      // A bad purpose first, then a file that never ends (chunked, no Content-Length).
      req.write(
        '--b\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nfine-tune\r\n' +
          '--b\r\ncontent-disposition: form-data; name="file"; filename="a.pdf"\r\n\r\n',
      );
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = () => {
        while (written < 200 * 1024 * 1024) {
          written += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
      };
      pump();
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).error).toMatchObject({ code: 'invalid_request', param: 'purpose' });
    expect(written).toBeLessThan(100 * 1024 * 1024);
    expect(await stores()).toEqual(before);
  }, 30_000);

  it('a client that goes away mid-upload leaves nothing', async () => {
    const before = await stores();
    const commandsBefore = sent.commands.length;
    const { request } = await import('node:http');
    const req = request(`${edge.url}/v1/files`, {
      method: 'POST',
      headers: { ...bearer(secret), 'content-type': 'multipart/form-data; boundary=b' },
    });
    req.on('error', () => {});
    req.write(
      '--b\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nvision\r\n' +
        '--b\r\ncontent-disposition: form-data; name="file"; filename="a.pdf"\r\n\r\n',
    );
    // beyond one part: a multipart upload is under way
    req.write(Buffer.concat([sample.pdf(), Buffer.alloc(7 * 1024 * 1024, 0x20)]));
    await new Promise((r) => setTimeout(r, 700));
    req.destroy();
    // The server aborts the multipart upload (it never completes it); give it a moment, then nothing is there.
    const commands = await eventually(() => {
      const since = sent.commands.slice(commandsBefore);
      return since.includes('AbortMultipartUploadCommand') && since;
    }, 'the edge to abort the multipart upload');
    expect(commands).toEqual(expect.arrayContaining(['CreateMultipartUploadCommand', 'AbortMultipartUploadCommand']));
    expect(commands).not.toContain('CompleteMultipartUploadCommand');
    expect(await stores()).toEqual(before);
  });
});

describe('access', () => {
  it('needs the files.write scope and a key', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret: noScope } = await makeKey(ctx.db, ws.id, { scopes: ['llm.evaluate'] });
    const res = await upload(edge.url, noScope, sample.png(2, 2));
    expect(res.status).toBe(403);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'insufficient_scope', param: 'files.write' });
    const anonymous = await fetch(`${edge.url}/v1/files`, { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });

  it('counts uploads per workspace: over uploadRpm → 429 with the rate-limit headers', async () => {
    const ws = await makeWorkspace(ctx.db);
    await ctx.db.workspace.update({ where: { id: ws.id }, data: { uploadRpm: 3 } });
    const { secret: key } = await makeKey(ctx.db, ws.id);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await upload(edge.url, key, sample.png(2, 2))).status);
    expect(statuses).toEqual([200, 200, 200]);
    const before = await stores();
    const limited = await upload(edge.url, key, sample.png(2, 2));
    expect(limited.status).toBe(429);
    expect((await jsonOf(limited)).error.code).toBe('rate_limit_exceeded');
    expect(limited.headers.get('x-ratelimit-limit-rpm')).toBe('3');
    expect(limited.headers.get('x-ratelimit-remaining-rpm')).toBe('0');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(await stores()).toEqual(before);
    // Another workspace is counted on its own.
    expect((await upload(edge.url, secret, sample.png(2, 2))).status).toBe(200);
  });
});
