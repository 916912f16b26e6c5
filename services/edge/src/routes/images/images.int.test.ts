// POST /v1/images/edits end to end: a real edge (real Postgres, Redis, S3) in front of the upstream-sim's OpenAI
// images protocol over real sockets, and a real HTTPS server (test CA, 443 on a loopback address let through by
// OUTBOUND_ALLOW_CIDRS) serving image_url references. Every result is checked against the sim's deterministic PNG,
// every archived object byte for byte, and every call's money against the ledger.
import { randomBytes, randomInt } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { ArchiveOutput } from '@gensvc/contracts';
import { modelRepository } from '@gensvc/db';
import { jobIdFor } from '@gensvc/queue';
import { outputFileId, outputObjectKey } from '@gensvc/storage';
import {
  addSimChannel,
  jsonOf,
  makeKey,
  makeWorkspace,
  objectKeys,
  sha256,
  sharedTestCa,
  startTlsServer,
  useTestContext,
  type TlsTestServer,
} from '@gensvc/testing';
import OpenAI, { toFile } from 'openai';
import { editedImagePng, startSim, type Sim } from '../../../../upstream-sim/src';
import { expectBalanced } from '../../billing-test-support';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { sampleMedia as sample } from '@gensvc/testing';
import { upload } from '../files/files-test-support';

/** A loopback address of its own, so that port 443 (the only port an image_url may use) is free for this file. */
const TLS_HOST = `127.${randomInt(64, 250)}.${randomInt(1, 250)}.${randomInt(2, 250)}`;
const FILE_BASE_URL = 'https://files.gensvc.test';
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: `${TLS_HOST}/32`, FILE_BASE_URL });

const MODEL = 'sim/edit-1';
const UNIT_PRICE = 40_000n;
const MiB = 1024 * 1024;

let sim: Sim;
let edge: EdgeUnderTest;
let refs: TlsTestServer;
let otherPort: TlsTestServer;
let secret: string;
let workspaceId: string;
const served = new Map<string, { type: string; body: Buffer }>();

const bearer = (key = secret) => ({ authorization: `Bearer ${key}` });
const png = sample.png(24, 16);
const jpg = sample.jpeg(32, 24);

beforeAll(async () => {
  sim = await startSim();
  const channel = (name: string, priority: number) =>
    addSimChannel(ctx.db, sim.url, { name, kind: 'openai', priority });
  const [a, b, chat] = await Promise.all([channel('img-a', 2), channel('img-b', 1), channel('chat-a', 0)]);
  await modelRepository.create(ctx.db, {
    id: MODEL,
    kind: 'image',
    unitPrice: UNIT_PRICE,
    routes: [
      { channelId: a.id, upstreamModel: 'gpt-image-1' },
      { channelId: b.id, upstreamModel: 'gpt-image-1' },
    ],
  });
  await modelRepository.create(ctx.db, { id: 'sim/chat-1', kind: 'chat', routes: [{ channelId: chat.id }] });
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id)).secret;

  const { ca } = sharedTestCa();
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const found = served.get(new URL(req.url ?? '/', 'https://x').pathname);
    if (!found) {
      res.statusCode = 404;
      return void res.end('not found');
    }
    res.setHeader('content-type', found.type);
    res.end(found.body);
  };
  refs = await startTlsServer(handler, { host: TLS_HOST, port: 443, cert: ca.issue([TLS_HOST]) });
  otherPort = await startTlsServer(handler, { host: TLS_HOST, cert: ca.issue([TLS_HOST]) });
  served.set('/cat.jpg', { type: 'image/jpeg', body: jpg });
  served.set('/dog.png', { type: 'image/png', body: png });
  served.set('/page.html', { type: 'image/png', body: Buffer.from('<!doctype html><title>not an image</title>') });
  edge = await startEdge(ctx, { outbound: { ca: refs.caPem } });
});

afterAll(async () => {
  await edge?.close();
  await sim?.close();
  await refs?.close();
  await otherPort?.close();
});

beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  type?: string;
}

function form(parts: Part[]): FormData {
  const f = new FormData();
  for (const p of parts) {
    if (typeof p.value === 'string') f.append(p.name, p.value);
    else
      f.append(p.name, new Blob([p.value], { type: p.type ?? 'application/octet-stream' }), p.filename ?? 'upload.bin');
  }
  return f;
}

const edit = (body: FormData | object, headers: Record<string, string> = {}, key = secret, path = '/v1/images/edits') =>
  fetch(`${edge.url}${path}`, {
    method: 'POST',
    headers: {
      ...bearer(key),
      ...(body instanceof FormData ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body instanceof FormData ? body : JSON.stringify(body),
  });

const expectedPng = (prompt: string, images: Buffer[], index = 0) =>
  editedImagePng({ prompt, images, index, size: '256x256' });

async function objectBytes(key: string): Promise<Buffer> {
  const out = await ctx.s3.send(new GetObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

/** What a refusal must leave as it was: tasks, files, reservations, ledger, objects, and no upstream call. */
async function stores() {
  const [tasks, files, reservations, ledger, objects, workspace] = await Promise.all([
    ctx.db.task.count(),
    ctx.db.file.count(),
    ctx.db.reservation.count(),
    ctx.db.ledgerEntry.count(),
    objectKeys(ctx.s3, ctx.config.s3.bucket),
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
  ]);
  return { tasks, files, reservations, ledger, objects: objects.sort(), balance: workspace.balance };
}

async function refused(send: () => Promise<Response>, status: number, code: string, param?: string): Promise<string> {
  const before = await stores();
  const res = await send();
  const body = await jsonOf(res);
  expect({ status: res.status, code: body.error?.code }).toEqual({ status, code });
  if (param !== undefined) expect(body.error.param).toBe(param);
  expect(await stores()).toEqual(before);
  expect(sim.requests()).toEqual([]);
  return body.error.message as string;
}

/** Checks an answered edit against the sim's images, S3, the File and Task rows and the ledger. */
async function expectArchivedEdit(res: Response, prompt: string, inputs: Buffer[], n = 1) {
  const body = await jsonOf(res);
  expect(res.status).toBe(200);
  const requestId = res.headers.get('x-request-id')!;
  expect(body.data).toHaveLength(n);
  const task = await ctx.db.task.findUniqueOrThrow({ where: { id: body.svc_task_id } });
  expect(task).toMatchObject({
    workspaceId,
    operation: 'images.edits',
    status: 'completed',
    model: MODEL,
    requestId,
    cost: UNIT_PRICE * BigInt(n),
  });
  for (const [index, result] of (body.data as Record<string, string>[]).entries()) {
    const bytes = Buffer.from(result.b64_json!, 'base64');
    expect(bytes.equals(expectedPng(prompt, inputs, index))).toBe(true);
    const fileId = outputFileId(ctx.config.signingSecret, task.id, index);
    const key = outputObjectKey(workspaceId, fileId);
    expect(result).toMatchObject({
      svc_file_id: fileId,
      svc_url: `${FILE_BASE_URL}/${ctx.config.s3.bucket}/${key}`,
      archive_status: 'archived',
    });
    expect(sha256(await objectBytes(key))).toBe(sha256(bytes));
    const file = await ctx.db.file.findUniqueOrThrow({ where: { id: fileId } });
    expect(file).toMatchObject({
      workspaceId,
      source: 'generated',
      taskId: task.id,
      outputIndex: index,
      contentType: 'image/png',
      bytes: BigInt(bytes.length),
      sha256: sha256(bytes),
      storageKey: key,
      archiveStatus: 'archived',
    });
    expect((task.output as { outputs: object[] }).outputs[index]).toMatchObject({
      kind: 'image',
      archive_status: 'archived',
      svc_file_id: fileId,
      svc_url: `${FILE_BASE_URL}/${ctx.config.s3.bucket}/${key}`,
    });
  }
  const reservation = await ctx.db.reservation.findFirstOrThrow({ where: { requestId } });
  expect(reservation).toMatchObject({ amount: UNIT_PRICE * BigInt(n), state: 'settled' });
  const charges = await ctx.db.ledgerEntry.findMany({ where: { requestId } });
  expect(charges).toHaveLength(1);
  expect(charges[0]).toMatchObject({
    kind: 'charge',
    amount: -UNIT_PRICE * BigInt(n),
    model: MODEL,
    taskId: task.id,
    reservationId: reservation.id,
  });
  await expectBalanced(ctx.db, workspaceId);
  return body;
}

describe('multipart edits', () => {
  it('one image → the edited PNG, archived as a file of a completed task, charged unitPrice once', async () => {
    const prompt = 'a red hat on the cat';
    const res = await edit(
      form([
        { name: 'model', value: MODEL },
        { name: 'prompt', value: prompt },
        { name: 'image', value: png, filename: 'cat.png', type: 'image/png' },
      ]),
    );
    expect(res.headers.get('x-ratelimit-limit-rpm')).toBe('300');
    const body = await expectArchivedEdit(res, prompt, [png]);
    expect(body.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    // The channel got its own credential and model name.
    expect(sim.requests().map((r) => [r.channel, r.protocol, r.model, r.status])).toEqual([
      ['img-a', 'openai-images', 'gpt-image-1', 200],
    ]);
  });

  it('two images and a mask, n=2 → two PNGs made from both images, two files, unitPrice × 2', async () => {
    const prompt = 'merge them';
    const second = sample.webp(20, 20);
    const res = await edit(
      form([
        { name: 'model', value: MODEL },
        { name: 'prompt', value: prompt },
        { name: 'n', value: '2' },
        { name: 'image[]', value: png, filename: 'a.png' },
        { name: 'image[]', value: second, filename: 'b.webp' },
        { name: 'mask', value: sample.png(24, 16), filename: 'mask.png' },
      ]),
      {},
      secret,
      '/api/v1/images/edits',
    );
    await expectArchivedEdit(res, prompt, [png, second], 2);
  });

  it('a non-image, an oversized side or an unknown field → 400 naming the field, nothing done', async () => {
    const base = [
      { name: 'model', value: MODEL },
      { name: 'prompt', value: 'x' },
    ];
    const message = await refused(
      () =>
        edit(
          form([...base, { name: 'image', value: Buffer.from('just text'), filename: 'cat.png', type: 'image/png' }]),
        ),
      400,
      'invalid_image',
      'image',
    );
    expect(message).toMatch(/PNG, JPEG, WebP, GIF/);
    await refused(
      () =>
        edit(form([...base, { name: 'image', value: png }, { name: 'mask', value: sample.pdf(), filename: 'm.png' }])),
      400,
      'invalid_image',
      'mask',
    );
    await refused(
      () => edit(form([...base, { name: 'image', value: sample.png(9000, 10) }])),
      400,
      'media_limit_exceeded',
      'image',
    );
    await refused(
      () => edit(form([...base, { name: 'image', value: png }, { name: 'style', value: 'vivid' }])),
      400,
      'invalid_request',
      'style',
    );
    await refused(
      () => edit(form([...base, { name: 'image', value: png }, { name: 'n', value: '11' }])),
      400,
      'invalid_request',
      'n',
    );
    await refused(() => edit(form(base)), 400, 'invalid_request', 'image');
    await refused(
      () =>
        edit(
          form([
            { name: 'model', value: 'sim/chat-1' },
            { name: 'prompt', value: 'x' },
            { name: 'image', value: png },
          ]),
        ),
      400,
      'model_not_supported',
      'model',
    );
    await refused(
      () =>
        edit(
          form([
            { name: 'model', value: 'sim/none' },
            { name: 'prompt', value: 'x' },
            { name: 'image', value: png },
          ]),
        ),
      404,
      'model_not_found',
      'model',
    );
    await refused(
      () =>
        fetch(`${edge.url}/v1/images/edits`, {
          method: 'POST',
          headers: { ...bearer(), 'content-type': 'text/plain' },
          body: 'hello',
        }),
      415,
      'unsupported_media_type',
    );
  });

  it('a request over 25 MiB in all → 413 with no row, object or hold left, declared or streamed', async () => {
    const half = Buffer.concat([png, Buffer.alloc(13 * MiB)]);
    const parts = [
      { name: 'model', value: MODEL },
      { name: 'prompt', value: 'big' },
      { name: 'image[]', value: half },
      { name: 'image[]', value: half },
    ];
    const message = await refused(() => edit(form(parts)), 413, 'payload_too_large');
    expect(message).toMatch(/25 MiB/);

    // Chunked, no Content-Length: the limit is enforced while the body streams.
    const boundary = `----edit${randomBytes(8).toString('hex')}`;
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${MODEL}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nbig\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n` +
        'Content-Type: image/png\r\n\r\n',
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const streamed = () =>
      new Promise<Response>((resolve, reject) => {
        const req = httpRequest(`${edge.url}/v1/images/edits`, {
          method: 'POST',
          headers: { ...bearer(), 'content-type': `multipart/form-data; boundary=${boundary}` },
        });
        req.on('response', (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (d) => chunks.push(d));
          r.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: r.statusCode })));
        });
        req.on('error', reject);
        req.write(head);
        req.write(png);
        for (let i = 0; i < 26; i++) req.write(Buffer.alloc(MiB));
        req.end(tail);
      });
    await refused(streamed, 413, 'payload_too_large');
  });
});

describe('image references', () => {
  it('a file id of the workspace → the edit of its bytes', async () => {
    const uploaded = await jsonOf(await upload(edge.url, secret, png, { filename: 'ref.png' }));
    expect(uploaded.id).toMatch(/^file_/);
    const prompt = 'from a file';
    await expectArchivedEdit(await edit({ model: MODEL, prompt, image_url: uploaded.id }), prompt, [png]);
  });

  it('an https URL (and a mix as a JSON-encoded form field) → the edit of the fetched bytes', async () => {
    const prompt = 'from the web';
    await expectArchivedEdit(await edit({ model: MODEL, prompt, image_url: `https://${TLS_HOST}/cat.jpg` }), prompt, [
      jpg,
    ]);
    expect(refs.requests.map((r) => r.url)).toContain('/cat.jpg');

    const uploaded = await jsonOf(await upload(edge.url, secret, sample.gif(8, 8), { filename: 'ref.gif' }));
    const mixed = 'mixed sources';
    const res = await edit(
      form([
        { name: 'model', value: MODEL },
        { name: 'prompt', value: mixed },
        { name: 'image', value: png, filename: 'a.png' },
        { name: 'image_url', value: JSON.stringify([`https://${TLS_HOST}/dog.png`, `https://${TLS_HOST}/cat.jpg`]) },
      ]),
    );
    await expectArchivedEdit(res, mixed, [png, png, jpg]);
    // The sim (like OpenAI) takes no GIF: its refusal is answered as the caller's, and the hold is given back.
    const before = await stores();
    const gifEdit = await edit({ model: MODEL, prompt: 'gif', image_url: [uploaded.id] });
    expect(gifEdit.status).toBe(400);
    expect((await jsonOf(gifEdit)).error.code).toBe('upstream_rejected_request');
    const after = await stores();
    expect({ ...after, reservations: before.reservations }).toEqual(before);
    expect(after.reservations).toBe(before.reservations + 1);
    expect(await ctx.db.reservation.count({ where: { workspaceId, state: 'held' } })).toBe(0);
  });

  it('hostile or unusable URLs → 400 invalid_image_url naming the rule; nothing fetched, held or called', async () => {
    const cases: [string, RegExp][] = [
      [`http://${TLS_HOST}/cat.jpg`, /\[scheme\].*https/],
      ['https://10.1.2.3/cat.jpg', /\[private_address\]/],
      ['https://127.0.0.1/cat.jpg', /\[private_address\].*loopback/],
      ['https://[::1]/cat.jpg', /\[private_address\]/],
      [`https://${TLS_HOST}:${otherPort.port}/cat.jpg`, /\[port\].*443/],
      [`https://user:pw@${TLS_HOST}/cat.jpg`, /\[userinfo\]/],
      [`https://${TLS_HOST}/missing.png`, /\[http_status\].*404/],
      [`https://${TLS_HOST}/page.html`, /not return a supported image/],
    ];
    for (const [url, rule] of cases) {
      const message = await refused(
        () => edit({ model: MODEL, prompt: 'x', image_url: url }),
        400,
        'invalid_image_url',
        'image_url',
      );
      expect(message).toMatch(rule);
    }
    expect(otherPort.requests).toEqual([]);
  });

  it("another workspace's file id → 404, as a missing one", async () => {
    const other = await makeWorkspace(ctx.db);
    const otherKey = (await makeKey(ctx.db, other.id)).secret;
    const theirs = await jsonOf(await upload(edge.url, otherKey, png, { filename: 'theirs.png' }));
    const message = await refused(
      () => edit({ model: MODEL, prompt: 'x', image_url: theirs.id }),
      404,
      'file_not_found',
      'image_url',
    );
    expect(message).toContain(theirs.id);
    await refused(
      () => edit({ model: MODEL, prompt: 'x', image_url: 'file_0000000000000000000000' }),
      404,
      'file_not_found',
      'image_url',
    );
    const pdf = await jsonOf(await upload(edge.url, secret, sample.pdf(), { filename: 'doc.pdf', purpose: 'input' }));
    await refused(() => edit({ model: MODEL, prompt: 'x', image_url: pdf.id }), 400, 'invalid_image', 'image_url');
  });
});

describe('upstream and billing', () => {
  it('a 500 from the first channel → the second answers; one charge', async () => {
    sim.faults.add({ channel: 'img-a', status: 500, times: 1 });
    const prompt = 'failover';
    await expectArchivedEdit(
      await edit(
        form([
          { name: 'model', value: MODEL },
          { name: 'prompt', value: prompt },
          { name: 'image', value: png },
        ]),
      ),
      prompt,
      [png],
    );
    expect(sim.requests().map((r) => [r.channel, r.status])).toEqual([
      ['img-a', 500],
      ['img-b', 200],
    ]);
  });

  it('an answer without usable results from the first channel is failed over too', async () => {
    sim.faults.add({ channel: 'img-a', malformed: 'shape', times: 1 });
    const prompt = 'malformed first';
    await expectArchivedEdit(
      await edit(
        form([
          { name: 'model', value: MODEL },
          { name: 'prompt', value: prompt },
          { name: 'image', value: png },
        ]),
      ),
      prompt,
      [png],
    );
    expect(sim.requests().map((r) => [r.channel, r.status])).toEqual([
      ['img-a', 200],
      ['img-b', 200],
    ]);
  });

  it('every channel failing → 502, the hold released, nothing recorded', async () => {
    sim.faults.add({ status: 503 });
    const before = await stores();
    const res = await edit({ model: MODEL, prompt: 'x', image_url: `https://${TLS_HOST}/cat.jpg` });
    expect(res.status).toBe(502);
    expect((await jsonOf(res)).error.code).toBe('upstream_error');
    const after = await stores();
    expect({ ...after, reservations: before.reservations }).toEqual(before);
    expect(await ctx.db.reservation.count({ where: { workspaceId, state: 'held' } })).toBe(0);
    await expectBalanced(ctx.db, workspaceId);
  });

  it('url results are pending archive jobs whose file ids are known in advance', async () => {
    const res = await edit(
      form([
        { name: 'model', value: MODEL },
        { name: 'prompt', value: 'as urls' },
        { name: 'response_format', value: 'url' },
        { name: 'image', value: png },
      ]),
    );
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    const [result] = body.data;
    const fileId = outputFileId(ctx.config.signingSecret, body.svc_task_id, 0);
    expect(result).toMatchObject({
      url: expect.stringContaining(`${sim.url}/ch/img-a/files/`),
      svc_file_id: fileId,
      archive_status: 'pending',
    });
    expect(result.svc_url).toBe(`${FILE_BASE_URL}/${ctx.config.s3.bucket}/${outputObjectKey(workspaceId, fileId)}`);
    const task = await ctx.db.task.findUniqueOrThrow({ where: { id: body.svc_task_id } });
    expect(task.output).toEqual({ outputs: [{ kind: 'image', url: result.url, archive_status: 'pending' }] });
    const job = await edge.deps.queues.get('archive').getJob(jobIdFor(ArchiveOutput, [task.id, 0]));
    expect(job?.data).toMatchObject({ taskId: task.id, outputIndex: 0, workspaceId });
    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(0);
    expect(await ctx.db.ledgerEntry.count({ where: { taskId: task.id } })).toBe(1);
  });

  it('Idempotency-Key: the same edit answers the first answer again, charged once; another edit → 409', async () => {
    const key = `edit-${randomBytes(6).toString('hex')}`;
    const parts = [
      { name: 'model', value: MODEL },
      { name: 'prompt', value: 'once' },
      { name: 'image', value: png },
    ];
    const first = await edit(form(parts), { 'idempotency-key': key });
    const firstBody = await expectArchivedEdit(first, 'once', [png]);
    const again = await edit(form(parts), { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await jsonOf(again)).toEqual(firstBody);
    expect(sim.requests()).toHaveLength(1);
    expect(await ctx.db.ledgerEntry.count({ where: { taskId: firstBody.svc_task_id } })).toBe(1);
    const other = await edit(form([...parts.slice(0, 2), { name: 'image', value: jpg }]), { 'idempotency-key': key });
    expect(other.status).toBe(409);
    expect((await jsonOf(other)).error.code).toBe('idempotency_key_reused');
  });

  it('a key without tasks.write → 403; no key → 401', async () => {
    const limited = (await makeKey(ctx.db, workspaceId, { scopes: ['files.write'] })).secret;
    await refused(
      () => edit({ model: MODEL, prompt: 'x', image_url: `https://${TLS_HOST}/cat.jpg` }, {}, limited),
      403,
      'insufficient_scope',
    );
    await refused(
      () => fetch(`${edge.url}/v1/images/edits`, { method: 'POST', body: form([{ name: 'model', value: MODEL }]) }),
      401,
      'missing_api_key',
    );
  });
});

describe('the official openai SDK', () => {
  it('images.edit with one and with two images gets the edited PNGs and the svc fields', async () => {
    const client = new OpenAI({ apiKey: secret, baseURL: `${edge.url}/v1`, maxRetries: 0 });
    const one = await client.images.edit({
      model: MODEL,
      prompt: 'sdk edit',
      image: await toFile(png, 'cat.png', { type: 'image/png' }),
    });
    expect(Buffer.from(one.data![0]!.b64_json!, 'base64').equals(expectedPng('sdk edit', [png]))).toBe(true);
    expect(one.data![0]).toMatchObject({ archive_status: 'archived', svc_file_id: expect.stringMatching(/^file_/) });

    const two = await client.images.edit({
      model: MODEL,
      prompt: 'sdk pair',
      n: 2,
      image: [await toFile(png, 'a.png', { type: 'image/png' }), await toFile(jpg, 'b.jpg', { type: 'image/jpeg' })],
    });
    expect(two.data).toHaveLength(2);
    for (const [i, d] of two.data!.entries())
      expect(Buffer.from(d.b64_json!, 'base64').equals(expectedPng('sdk pair', [png, jpg], i))).toBe(true);
    await expectBalanced(ctx.db, workspaceId);
  });
});
