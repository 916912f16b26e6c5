// List, inspect, delete, content links and delivery links, against real Postgres, Redis and S3 over a socket.
import { createHmac } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { signFileToken } from '@gensvc/auth';
import { fileRepository, newId, type Tier } from '@gensvc/db';
import { fileObjectKey } from '@gensvc/storage';
import {
  jsonOf,
  makeKey,
  makeWorkspace,
  objectKeys,
  sampleMedia as sample,
  sha256,
  useTestContext,
} from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer, upload, validPresignedGet } from './files-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;

beforeAll(async () => {
  edge = await startEdge(ctx);
});
afterAll(() => edge.close());

async function workspaceWithKey(tier: Tier = 'payg') {
  const ws = await makeWorkspace(ctx.db, { tier });
  const { secret } = await makeKey(ctx.db, ws.id, { scopes: ['files.write'] });
  return { id: ws.id, secret };
}

async function uploaded(secret: string, bytes: Buffer, filename = 'photo.png') {
  const res = await upload(edge.url, secret, bytes, { filename });
  expect(res.status).toBe(200);
  return jsonOf(res);
}

/** The content link, on the edge under test (links name PUBLIC_BASE_URL). */
const local = (url: string) => url.replace(ctx.config.publicBaseUrl, edge.url);
const get = (path: string, secret: string) => fetch(`${edge.url}${path}`, { headers: bearer(secret) });

describe('list', () => {
  let ws: { id: string; secret: string };
  let other: { id: string; secret: string };
  /** Every visible file of `ws`, in (createdAt, id) ascending order. */
  let ascending: { id: string; purpose: string; source: string }[] = [];

  beforeAll(async () => {
    ws = await workspaceWithKey();
    other = await workspaceWithKey();
    const base = Date.now() - 3_600_000;
    const rows = [];
    for (let i = 0; i < 23; i++) {
      // Three files share each creation instant: the id breaks the tie.
      const createdAt = new Date(base + Math.floor(i / 3) * 1000);
      const source = i % 4 === 0 ? 'generated' : 'upload';
      rows.push({ id: newId('file'), createdAt, purpose: i % 2 ? 'vision' : 'input', source } as const);
    }
    for (const r of rows) {
      await fileRepository.create(ctx.db, {
        ...r,
        workspaceId: ws.id,
        filename: `${r.id}.png`,
        contentType: 'image/png',
        bytes: 10n,
        storageKey: fileObjectKey(ws.id, r.id),
        expiresAt: new Date(Date.now() + 86_400_000),
        ...(r.source === 'generated'
          ? { archiveStatus: 'archived' as const, publicExpiresAt: new Date(Date.now() + 2 * 86_400_000) }
          : {}),
      });
    }
    // Neither an expired file nor another workspace's file is listed.
    const expired = newId('file');
    await fileRepository.create(ctx.db, {
      id: expired,
      workspaceId: ws.id,
      source: 'upload',
      purpose: 'vision',
      filename: 'old.png',
      contentType: 'image/png',
      bytes: 1n,
      storageKey: fileObjectKey(ws.id, expired),
      expiresAt: new Date(Date.now() - 1000),
    });
    const foreign = newId('file');
    await fileRepository.create(ctx.db, {
      id: foreign,
      workspaceId: other.id,
      source: 'upload',
      purpose: 'vision',
      filename: 'x.png',
      contentType: 'image/png',
      bytes: 1n,
      storageKey: fileObjectKey(other.id, foreign),
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    ascending = rows
      .slice()
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(({ id, purpose, source }) => ({ id, purpose, source }));
  });

  async function walk(query: string, secret = ws.secret) {
    const ids: string[] = [];
    let after = '';
    for (let pages = 0; pages < 50; pages++) {
      const res = await get(`/v1/files?${query}${after ? `&after=${after}` : ''}`, secret);
      expect(res.status).toBe(200);
      const page = await jsonOf(res);
      expect(page.object).toBe('list');
      expect(page.first_id).toBe(page.data[0]?.id ?? null);
      expect(page.last_id).toBe(page.data.at(-1)?.id ?? null);
      ids.push(...page.data.map((f: { id: string }) => f.id));
      if (!page.has_more) return ids;
      after = page.last_id;
    }
    throw new Error('did not end');
  }

  it('pages through everything once, in order, both ways; default limit 20, newest first', async () => {
    const first = await jsonOf(await get('/v1/files', ws.secret));
    expect(first.data).toHaveLength(20);
    expect(first.has_more).toBe(true);
    expect(first.data.map((f: { id: string }) => f.id)).toEqual(
      ascending
        .map((f) => f.id)
        .reverse()
        .slice(0, 20),
    );
    expect(first.data[0]).toMatchObject({
      object: 'file',
      bytes: 10,
      content_type: 'image/png',
      url: expect.stringContaining('/content?token='),
    });

    expect(await walk('limit=7&order=asc')).toEqual(ascending.map((f) => f.id));
    expect(await walk('limit=5')).toEqual(ascending.map((f) => f.id).reverse());
    expect(await walk('limit=100', other.secret)).toHaveLength(1);
    const last = await jsonOf(await get(`/api/v1/files?limit=100&after=${ascending[0]!.id}`, ws.secret));
    expect(last).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
  });

  it('filters by purpose and source, with archive_status on generated outputs', async () => {
    expect(await walk('limit=4&purpose=vision&order=asc')).toEqual(
      ascending.filter((f) => f.purpose === 'vision').map((f) => f.id),
    );
    expect(await walk('limit=3&source=generated')).toEqual(
      ascending
        .filter((f) => f.source === 'generated')
        .map((f) => f.id)
        .reverse(),
    );
    const generated = await jsonOf(await get('/v1/files?source=generated&limit=1', ws.secret));
    expect(generated.data[0]).toMatchObject({ source: 'generated', archive_status: 'archived' });
    expect(await walk('purpose=none')).toEqual([]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['order=newest', 'order'],
    ['source=both', 'source'],
    ['after=nope', 'after'],
  ])('?%s → 400 naming %s', async (query, param) => {
    const res = await get(`/v1/files?${query}`, ws.secret);
    expect(res.status).toBe(400);
    const { error } = await jsonOf(res);
    expect(error).toMatchObject({ code: 'invalid_request', param });
    expect(error.message).toContain(param);
  });

  it('a cursor that is not a file of this workspace → 400', async () => {
    const foreignFile = (await jsonOf(await get('/v1/files', other.secret))).data[0].id;
    for (const after of [foreignFile, newId('file')]) {
      const res = await get(`/v1/files?after=${after}`, ws.secret);
      expect(res.status).toBe(400);
      expect((await jsonOf(res)).error.param).toBe('after');
    }
  });
});

describe('inspect, content link, delete', () => {
  it('inspect gives the file with a fresh working content link', async () => {
    const ws = await workspaceWithKey();
    const bytes = sample.png(10, 10);
    const file = await uploaded(ws.secret, bytes);
    for (const prefix of ['/v1/files', '/api/v1/files']) {
      const res = await get(`${prefix}/${file.id}`, ws.secret);
      expect(res.status).toBe(200);
      const again = await jsonOf(res);
      expect({ ...again, url: undefined }).toEqual({ ...file, url: undefined });
      expect(sha256(await (await fetch(local(again.url))).arrayBuffer())).toBe(sha256(bytes));
    }
  });

  it('serves ranges: 206 with Content-Range, suffix and open ranges, 416 when unsatisfiable', async () => {
    const ws = await workspaceWithKey();
    const bytes = sample.wav(0.5);
    const file = await uploaded(ws.secret, bytes, 'tone.wav');
    const url = local(file.url);
    const size = bytes.length;
    const ranged = async (range: string) => {
      const res = await fetch(url, { headers: { range } });
      return {
        status: res.status,
        contentRange: res.headers.get('content-range'),
        length: res.headers.get('content-length'),
        body: Buffer.from(await res.arrayBuffer()),
      };
    };
    expect(await ranged('bytes=0-9')).toEqual({
      status: 206,
      contentRange: `bytes 0-9/${size}`,
      length: '10',
      body: bytes.subarray(0, 10),
    });
    expect(await ranged('bytes=100-')).toEqual({
      status: 206,
      contentRange: `bytes 100-${size - 1}/${size}`,
      length: String(size - 100),
      body: bytes.subarray(100),
    });
    expect(await ranged('bytes=-16')).toEqual({
      status: 206,
      contentRange: `bytes ${size - 16}-${size - 1}/${size}`,
      length: '16',
      body: bytes.subarray(size - 16),
    });
    expect(await ranged(`bytes=10-${size + 1000}`)).toMatchObject({
      status: 206,
      contentRange: `bytes 10-${size - 1}/${size}`,
      body: bytes.subarray(10),
    });
    const beyond = await fetch(url, { headers: { range: `bytes=${size}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${size}`);
    expect((await jsonOf(beyond)).error.code).toBe('range_not_satisfiable');
    // Several ranges (or a malformed header) may be ignored: the whole file.
    const multi = await ranged('bytes=0-1,5-6');
    expect({ status: multi.status, sha: sha256(multi.body) }).toEqual({ status: 200, sha: sha256(bytes) });
    const full = await fetch(url);
    expect(full.headers.get('accept-ranges')).toBe('bytes');
    expect(full.headers.get('content-length')).toBe(String(size));
    const head = await fetch(url, { method: 'HEAD', headers: { range: 'bytes=0-3' } });
    expect({ status: head.status, range: head.headers.get('content-range') }).toEqual({
      status: 206,
      range: `bytes 0-3/${size}`,
    });
  });

  it('names the file safely (RFC 6266) and never lets the browser sniff', async () => {
    const ws = await workspaceWithKey();
    const file = await uploaded(ws.secret, sample.pdf(), 'Grüße; "x".exe');
    expect(file.filename).toBe('Grüße; %22x%22.pdf');
    const res = await fetch(local(file.url));
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="Gr__e; _22x_22.pdf"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%3B%20%2522x%2522.pdf`,
    );
    const image = await uploaded(ws.secret, sample.gif(3, 3), 'anim.gif');
    expect((await fetch(local(image.url))).headers.get('content-disposition')).toBe(
      `inline; filename="anim.gif"; filename*=UTF-8''anim.gif`,
    );
  });

  it('refuses tampered, expired, foreign-secret, unsigned and mismatched tokens with 401 and no bytes', async () => {
    const ws = await workspaceWithKey();
    const a = await uploaded(ws.secret, sample.png(5, 5));
    const b = await uploaded(ws.secret, sample.png(6, 6));
    const token = new URL(a.url).searchParams.get('token')!;
    const [h, p, s] = token.split('.') as [string, string, string];
    const flip = (t: string) => (t[5] === 'A' ? `${t.slice(0, 5)}B${t.slice(6)}` : `${t.slice(0, 5)}A${t.slice(6)}`);
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400 })).toString('base64url');
    const expired = (await signFileToken(ctx.config.signingSecret, { fileId: a.id, workspaceId: ws.id }, -10)).token;
    const foreignSecret = (
      await signFileToken('another-secret-of-at-least-32-characters!', { fileId: a.id, workspaceId: ws.id })
    ).token;
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
    // Correctly signed with the server's secret, but not a download token.
    const otherScopePayload = Buffer.from(JSON.stringify({ ...claims, scope: 'upload' })).toString('base64url');
    const otherScopeMac = createHmac('sha256', ctx.config.signingSecret).update(`${h}.${otherScopePayload}`);
    const otherScope = `${h}.${otherScopePayload}.${otherScopeMac.digest('base64url')}`;
    const tokenForB = new URL(b.url).searchParams.get('token')!;
    const bad = [
      `${h}.${p}.${flip(s)}`,
      `${h}.${forgedPayload}.${s}`,
      expired,
      foreignSecret,
      unsigned,
      otherScope,
      '',
      'garbage',
    ];
    for (const t of bad) {
      const res = await fetch(`${edge.url}/api/v1/files/${a.id}/content?token=${encodeURIComponent(t)}`);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect((await jsonOf(res)).error.code).toBe('invalid_file_token');
    }
    // A valid token for file b does not open file a.
    expect((await fetch(`${edge.url}/api/v1/files/${a.id}/content?token=${tokenForB}`)).status).toBe(401);
    expect((await fetch(`${edge.url}/api/v1/files/${a.id}/content`)).status).toBe(401);
    expect((await fetch(local(a.url))).status).toBe(200);
  });

  it('delete removes row and bytes at once; the old link then answers 404', async () => {
    const ws = await workspaceWithKey();
    const file = await uploaded(ws.secret, sample.mp3(5));
    const row = await ctx.db.file.findUniqueOrThrow({ where: { id: file.id } });
    expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toContain(row.storageKey);
    const res = await fetch(`${edge.url}/v1/files/${file.id}`, { method: 'DELETE', headers: bearer(ws.secret) });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect(await ctx.db.file.findUnique({ where: { id: file.id } })).toBeNull();
    expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).not.toContain(row.storageKey);
    const link = await fetch(local(file.url));
    expect(link.status).toBe(404);
    expect(link.headers.get('content-type')).toMatch(/application\/json/);
    expect((await get(`/v1/files/${file.id}`, ws.secret)).status).toBe(404);
    expect(
      (await fetch(`${edge.url}/api/v1/files/${file.id}`, { method: 'DELETE', headers: bearer(ws.secret) })).status,
    ).toBe(404);
  });
});

describe('content when the bytes are not there', () => {
  it('bytes gone under a row → 404; S3 failing → 503; both plain JSON, never the file headers', async () => {
    const ws = await workspaceWithKey();
    const file = await uploaded(ws.secret, sample.png(3, 3));
    const row = await ctx.db.file.findUniqueOrThrow({ where: { id: file.id } });
    const failing = new Proxy(ctx.s3, {
      get: (target, prop, receiver) =>
        prop === 'send'
          ? () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { name: 'Error' }))
          : Reflect.get(target, prop, receiver),
    });
    const broken = await startEdge(ctx, { s3: failing });
    try {
      const res = await fetch(file.url.replace(ctx.config.publicBaseUrl, broken.url));
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.headers.get('content-disposition')).toBeNull();
      expect((await jsonOf(res)).error.code).toBe('storage_unavailable');
    } finally {
      await broken.close();
    }
    await ctx.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.s3.bucket, Key: row.storageKey }));
    const gone = await fetch(local(file.url));
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toMatch(/application\/json/);
    expect(gone.headers.get('content-disposition')).toBeNull();
  });
});

describe('workspaces are isolated', () => {
  it("another workspace's file is 404 for inspect, delete, signed_url; its row and bytes stay", async () => {
    const owner = await workspaceWithKey('team');
    const stranger = await workspaceWithKey('team');
    const file = await uploaded(owner.secret, sample.png(8, 8));
    for (const path of [`/v1/files/${file.id}`, `/api/v1/files/${file.id}`, `/api/v1/files/${file.id}/signed_url`]) {
      const res = await get(path, stranger.secret);
      expect(res.status).toBe(404);
      expect((await jsonOf(res)).error.type).toBe('not_found_error');
    }
    expect(
      (await fetch(`${edge.url}/v1/files/${file.id}`, { method: 'DELETE', headers: bearer(stranger.secret) })).status,
    ).toBe(404);
    expect(await ctx.db.file.count({ where: { id: file.id } })).toBe(1);
    expect((await fetch(local(file.url))).status).toBe(200);
    expect((await get(`/v1/files/not-an-id`, owner.secret)).status).toBe(404);
  });
});

describe('signed delivery links', () => {
  it.each(['free', 'payg'] as const)('%s workspaces → 403 tier_not_allowed naming the tiers', async (tier) => {
    const ws = await workspaceWithKey(tier);
    const file = await uploaded(ws.secret, sample.png(2, 2));
    const res = await get(`/api/v1/files/${file.id}/signed_url`, ws.secret);
    expect(res.status).toBe(403);
    const { error } = await jsonOf(res);
    expect(error.code).toBe('tier_not_allowed');
    expect(error.message).toMatch(/Team and Enterprise/);
  });

  it.each(['team', 'enterprise'] as const)(
    '%s: a one-hour presigned GetObject link that S3 serves; tampering breaks it',
    async (tier) => {
      const ws = await workspaceWithKey(tier);
      const bytes = sample.jpeg(40, 30);
      const file = await uploaded(ws.secret, bytes, 'shot.jpg');
      const res = await get(`/api/v1/files/${file.id}/signed_url`, ws.secret);
      expect(res.status).toBe(200);
      const body = await jsonOf(res);
      expect(Object.keys(body).sort()).toEqual(['expires_at', 'url']);
      expect(Math.abs(Date.parse(body.expires_at) - Date.now() - 3_600_000)).toBeLessThan(10_000);
      const url = new URL(body.url);
      expect(url.origin).toBe(ctx.config.s3.endpoint);
      expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
      expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
      const direct = await fetch(body.url);
      expect(direct.status).toBe(200);
      expect(direct.headers.get('content-type')).toBe('image/jpeg');
      expect(sha256(await direct.arrayBuffer())).toBe(sha256(bytes));
      // s3rver does not check V4 signatures: check the signature here, and that a lengthened expiry breaks it.
      expect(validPresignedGet(body.url, ctx.config.s3.secretAccessKey!)).toBe(true);
      url.searchParams.set('X-Amz-Expires', '86400');
      expect(validPresignedGet(url.toString(), ctx.config.s3.secretAccessKey!)).toBe(false);
    },
  );

  describe('with FILE_BASE_URL naming a file host in front of S3', () => {
    let host: Server;
    let hostUrl = '';
    let edgeWithHost: EdgeUnderTest;
    const seenHosts: string[] = [];
    beforeAll(async () => {
      // A pass-through file host (as a CDN in front of the bucket would be): the Host header goes through unchanged.
      const s3 = new URL(ctx.config.s3.endpoint!);
      host = createServer((req, res) => {
        seenHosts.push(req.headers.host ?? '');
        const up = request(
          { host: s3.hostname, port: s3.port, path: req.url, method: req.method, headers: req.headers },
          (r) => {
            res.writeHead(r.statusCode!, r.headers);
            r.pipe(res);
          },
        );
        req.pipe(up);
      });
      await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
      hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
      edgeWithHost = await startEdge(ctx, { config: { ...ctx.config, fileBaseUrl: hostUrl } });
    });
    afterAll(async () => {
      await edgeWithHost.close();
      await new Promise((r) => host.close(r));
    });

    it('links point at the file host and work through it', async () => {
      const ws = await workspaceWithKey('enterprise');
      const bytes = sample.webp(20, 20);
      const res = await upload(edgeWithHost.url, ws.secret, bytes, { filename: 'w.webp' });
      const file = await jsonOf(res);
      const { url } = await jsonOf(
        await fetch(`${edgeWithHost.url}/api/v1/files/${file.id}/signed_url`, { headers: bearer(ws.secret) }),
      );
      expect(url.startsWith(`${hostUrl}/${ctx.config.s3.bucket}/`)).toBe(true);
      // Signed for the file host itself (the signature covers the host), not rewritten from an S3 link.
      expect(validPresignedGet(url, ctx.config.s3.secretAccessKey!)).toBe(true);
      const rewritten = new URL(url);
      rewritten.host = new URL(ctx.config.s3.endpoint!).host;
      expect(validPresignedGet(rewritten.toString(), ctx.config.s3.secretAccessKey!)).toBe(false);
      const direct = await fetch(url);
      expect(direct.status).toBe(200);
      expect(sha256(await direct.arrayBuffer())).toBe(sha256(bytes));
      expect(seenHosts).toContain(new URL(hostUrl).host);
    });
  });
});
