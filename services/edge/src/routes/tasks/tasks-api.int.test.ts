// Reading, listing and canceling tasks, the delivery log, redelivery and the callback secret, over a real socket
// against real Postgres, Redis and S3. The later states of a task (submitted, its output recorded and archived) are
// reached through the repositories, as the task runner and archiver reach them.
import { Readable } from 'node:stream';
import { callbackRepository, channelRepository, fileRepository, secretAad, taskRepository } from '@gensvc/db';
import { generatedOutputLocation, putObjectStream } from '@gensvc/storage';
import { eventually, jsonOf, makeCustomer, startTlsServer, useTestContext, type TlsTestServer } from '@gensvc/testing';
import { deliveryIdFor, newCallbackSecret } from '@gensvc/webhooks';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer } from '../files/files-test-support';
import { createTask, errorOf, IMAGE_PRICE, MODELS, seedTaskModels, VIDEO_PRICE } from './tasks-test-support';

const FILE_BASE_URL = 'https://files.gensvc.test';
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32', FILE_BASE_URL });
let edge: EdgeUnderTest;
let receiver: TlsTestServer;

beforeAll(async () => {
  receiver = await startTlsServer((_req, res) => res.end('ok'));
  edge = await startEdge(ctx, { outbound: { ca: receiver.caPem } });
  await seedTaskModels(ctx.db);
});
afterAll(async () => {
  await edge?.close();
  await receiver?.close();
});

type Customer = Awaited<ReturnType<typeof makeCustomer>>;
const get = (path: string, secret: string) => fetch(`${edge.url}${path}`, { headers: bearer(secret) });
const post = (path: string, secret: string) => fetch(`${edge.url}${path}`, { method: 'POST', headers: bearer(secret) });
const job = (queue: 'tasks' | 'callbacks', id: string) => edge.deps.queues.get(queue).getJob(id);

async function newTask(
  c: Customer,
  opts: { callback?: boolean; video?: boolean; prompt?: string } = {},
): Promise<string> {
  const body = opts.video
    ? { model: MODELS.video, prompt: opts.prompt ?? 'rain', duration_seconds: 2 }
    : { model: MODELS.image, prompt: opts.prompt ?? 'a kite' };
  const res = await createTask(edge.url, c.secret, opts.video ? 'sim/text-to-video' : 'sim/text-to-image', {
    ...body,
    ...(opts.callback ? { callback_url: `${receiver.url}/hooks` } : {}),
  });
  expect(res.status).toBe(202);
  return (await jsonOf(res)).task_id;
}

/** As the task runner does on submission. */
async function submit(taskId: string) {
  const channel = await channelRepository.findByName(ctx.db, 'fal');
  expect(
    await taskRepository.markSubmitted(ctx.db, taskId, {
      channelId: channel!.id,
      upstreamId: `req-${taskId}`,
      upstreamUrls: null,
    }),
  ).toBe(true);
}

/**
 * A video task taken to completed with its output archived as the archiver leaves it: the provider's result
 * recorded (which settles the hold), the bytes in S3, the File row, the entry marked archived.
 */
async function completedVideo(c: Customer, bytes: Buffer) {
  const id = await newTask(c, { video: true });
  await submit(id);
  const providerUrl = 'https://provider.example/outputs/rain.mp4';
  expect(
    await taskRepository.recordOutput(
      ctx.db,
      id,
      { outputs: [{ kind: 'video', url: providerUrl, duration: 2, archive_status: 'pending' }] },
      VIDEO_PRICE * 2n,
    ),
  ).toMatchObject({ charged: VIDEO_PRICE * 2n });
  const bucket = ctx.config.s3.bucket;
  const loc = generatedOutputLocation({
    secret: ctx.config.signingSecret,
    fileBaseUrl: ctx.config.fileBaseUrl,
    bucket,
    workspaceId: c.ws.id,
    taskId: id,
    outputIndex: 0,
  });
  await putObjectStream(ctx.s3, {
    bucket,
    key: loc.storageKey,
    body: Readable.from([bytes]),
    contentType: 'video/mp4',
  });
  await fileRepository.create(ctx.db, {
    id: loc.fileId,
    workspaceId: c.ws.id,
    source: 'generated',
    purpose: 'output',
    filename: 'output.mp4',
    contentType: 'video/mp4',
    bytes: BigInt(bytes.length),
    storageKey: loc.storageKey,
    expiresAt: new Date(Date.now() + 30 * 86_400_000),
    publicExpiresAt: new Date(Date.now() + 90 * 86_400_000),
    taskId: id,
    outputIndex: 0,
    archiveStatus: 'archived',
  });
  await ctx.db.task.update({
    where: { id },
    data: {
      output: {
        outputs: [
          {
            kind: 'video',
            url: providerUrl,
            duration: 2,
            archive_status: 'archived',
            svc_file_id: loc.fileId,
            svc_url: loc.url,
          },
        ],
      },
    },
  });
  expect(await taskRepository.completeIfArchived(ctx.db, id)).toEqual({
    id,
    workspaceId: c.ws.id,
    callbackRoundStart: 1,
    callback: false,
  });
  return { id, loc, providerUrl };
}

/** Content links name PUBLIC_BASE_URL; the edge under test listens elsewhere. */
const local = (url: string) => url.replace(ctx.config.publicBaseUrl, edge.url);

describe('GET /api/v1/tasks/{task_id}', () => {
  it("answers the workspace's task; another workspace's, an unknown or a malformed id is 404", async () => {
    const c = await makeCustomer(ctx.db);
    const other = await makeCustomer(ctx.db);
    const created = await createTask(edge.url, c.secret, 'sim/text-to-image', {
      model: MODELS.image,
      prompt: 'a kite',
    });
    const envelope = await jsonOf(created);
    const res = await get(`/api/v1/tasks/${envelope.task_id}`, c.secret);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual(envelope);

    for (const [secret, id] of [
      [other.secret, envelope.task_id],
      [c.secret, 'tsk_0000000000000000000000'],
      [c.secret, 'tsk_nope'],
      [c.secret, 'file_0000000000000000000000'],
    ]) {
      const error = await errorOf(await get(`/api/v1/tasks/${id}`, secret!), 404, 'task_not_found');
      expect(error.param).toBe('task_id');
    }
  });

  it('needs tasks.read', async () => {
    const c = await makeCustomer(ctx.db, { scopes: ['tasks.write'] });
    const id = await newTask(c);
    expect((await errorOf(await get(`/api/v1/tasks/${id}`, c.secret), 403, 'insufficient_scope')).param).toBe(
      'tasks.read',
    );
  });

  it('a completed video: output.url on {file_url}, its file_id, a working signed url fresh at every GET', async () => {
    const c = await makeCustomer(ctx.db);
    const bytes = Buffer.from(`not really an mp4 ${'x'.repeat(5000)}`);
    const { id, loc, providerUrl } = await completedVideo(c, bytes);

    const first = await jsonOf(await get(`/api/v1/tasks/${id}`, c.secret));
    expect(first).toMatchObject({
      task_id: id,
      status: 'completed',
      cost: { amount: Number(VIDEO_PRICE * 2n) / 1e6, currency: 'USD' },
      completed_at: expect.any(String),
      output: {
        url: `${FILE_BASE_URL}/${ctx.config.s3.bucket}/${loc.storageKey}`,
        duration: 2,
        file_id: loc.fileId,
        archive_status: 'archived',
        provider_url: providerUrl,
        download_url: expect.stringMatching(
          new RegExp(`^${ctx.config.publicBaseUrl}/api/v1/files/${loc.fileId}/content\\?token=`),
        ),
        download_expires_at: expect.any(String),
      },
    });
    const expires = Date.parse(first.output.download_expires_at);
    expect(expires).toBeGreaterThan(Date.now() + 3_500_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3_600_000);

    const download = await fetch(local(first.output.download_url));
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

    // Tokens are signed to the second: a GET in the next second signs another.
    const second = await eventually(
      async () => {
        const again = await jsonOf(await get(`/api/v1/tasks/${id}`, c.secret));
        return again.output.download_url !== first.output.download_url && again;
      },
      'a GET that signs a fresh download url',
      3_000,
      100,
    );
    expect(second.output.download_url).not.toBe(first.output.download_url);
    expect(Date.parse(second.output.download_expires_at)).toBeGreaterThan(expires);
    expect(Buffer.from(await (await fetch(local(second.output.download_url))).arrayBuffer()).equals(bytes)).toBe(true);
    expect({ ...second, output: { ...second.output, download_url: null, download_expires_at: null } }).toEqual({
      ...first,
      output: { ...first.output, download_url: null, download_expires_at: null },
    });

    // The list shows the same envelope, with its own fresh link (files looked up once per page).
    const listed = (await jsonOf(await get('/api/v1/tasks', c.secret))).data.find(
      (t: { task_id: string }) => t.task_id === id,
    );
    expect(listed.output).toMatchObject({
      file_id: loc.fileId,
      download_url: expect.stringContaining(`/api/v1/files/${loc.fileId}/content?token=`),
    });
    expect(Buffer.from(await (await fetch(local(listed.output.download_url))).arrayBuffer()).equals(bytes)).toBe(true);

    // Once the file has left the library, there is nothing to download; the public copy's url stays.
    await fileRepository.markDeleted(ctx.db, c.ws.id, loc.fileId);
    const after = await jsonOf(await get(`/api/v1/tasks/${id}`, c.secret));
    expect(after.output.url).toBe(first.output.url);
    expect(after.output).not.toHaveProperty('download_url');
    const listedAfter = (await jsonOf(await get('/api/v1/tasks', c.secret))).data.find(
      (t: { task_id: string }) => t.task_id === id,
    );
    expect(listedAfter.output).not.toHaveProperty('download_url');
  });
});

describe('GET /api/v1/tasks', () => {
  let c: Customer;
  /** Oldest first. */
  const ids: string[] = [];
  beforeAll(async () => {
    c = await makeCustomer(ctx.db);
    for (let i = 0; i < 7; i++) ids.push(await newTask(c, { prompt: `kite ${i}` }));
    // Another workspace's tasks never show.
    await newTask(await makeCustomer(ctx.db));
  });

  async function walk(query: string) {
    const pages: { ids: string[]; has_more: boolean; first_id: string | null; last_id: string | null }[] = [];
    let after = '';
    for (let n = 0; n < 20; n++) {
      const res = await get(`/api/v1/tasks?${query}${after}`, c.secret);
      expect(res.status).toBe(200);
      const page = await jsonOf(res);
      expect(page.object).toBe('list');
      const pageIds = page.data.map((t: { object: string; task_id: string }) => {
        expect(t.object).toBe('task');
        return t.task_id;
      });
      pages.push({ ids: pageIds, has_more: page.has_more, first_id: page.first_id, last_id: page.last_id });
      if (!page.has_more) break;
      after = `&after=${page.last_id}`;
    }
    return pages;
  }

  it('pages newest first with the cursor, 3 pages of 3, 3 and 1', async () => {
    const pages = await walk('limit=3');
    expect(pages.map((p) => p.ids)).toEqual([ids.slice(4).reverse(), ids.slice(1, 4).reverse(), ids.slice(0, 1)]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
    expect(pages.map((p) => [p.first_id, p.last_id])).toEqual(pages.map((p) => [p.ids[0], p.ids.at(-1)]));
  });

  it('pages oldest first with order=asc; the default limit is 20', async () => {
    expect((await walk('order=asc&limit=3')).flatMap((p) => p.ids)).toEqual(ids);
    const all = await walk('');
    expect(all).toHaveLength(1);
    expect(all[0]!.ids).toEqual([...ids].reverse());
  });

  it('filters by status', async () => {
    for (const id of [ids[1]!, ids[5]!]) expect((await post(`/api/v1/tasks/${id}/cancel`, c.secret)).status).toBe(200);
    expect((await walk('status=canceled')).flatMap((p) => p.ids)).toEqual([ids[5], ids[1]]);
    expect((await walk('status=queued&order=asc&limit=2')).flatMap((p) => p.ids)).toEqual(
      ids.filter((_, i) => i !== 1 && i !== 5),
    );
    expect((await walk('status=completed')).flatMap((p) => p.ids)).toEqual([]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=ten', 'limit'],
    ['order=newest', 'order'],
    ['status=done', 'status'],
    ['after=tsk_short', 'after'],
    ['limit=2&limit=3', 'limit'],
  ])('400 for %s, naming %s', async (query, param) => {
    const error = await errorOf(await get(`/api/v1/tasks?${query}`, c.secret), 400, 'invalid_request');
    expect(error.param).toBe(param);
  });

  it("400 for an after that is not this workspace's task", async () => {
    const foreign = await newTask(await makeCustomer(ctx.db));
    const error = await errorOf(await get(`/api/v1/tasks?after=${foreign}`, c.secret), 400, 'invalid_request');
    expect(error).toMatchObject({ param: 'after', message: expect.stringContaining(foreign) });
  });
});

describe('POST /api/v1/tasks/{task_id}/cancel', () => {
  it('a queued task → canceled, hold given back, no provider job to cancel, no callback without its URL', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await newTask(c);
    expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: c.ws.id } })).balance).toBe(
      10_000_000n - IMAGE_PRICE,
    );
    const res = await post(`/api/v1/tasks/${id}/cancel`, c.secret);
    expect(res.status).toBe(200);
    const answered = await jsonOf(res);
    expect(answered).toMatchObject({
      task_id: id,
      status: 'canceled',
      cost: { amount: 0 },
      error: null,
      completed_at: expect.any(String),
      callback: null,
    });
    // The canceled row the cancel itself returned renders exactly as a read of it.
    expect(answered).toEqual(await jsonOf(await get(`/api/v1/tasks/${id}`, c.secret)));
    const task = await ctx.db.task.findUniqueOrThrow({ where: { id } });
    expect(task).toMatchObject({ status: 'canceled', callbackState: 'none' });
    expect(await ctx.db.reservation.findUniqueOrThrow({ where: { id: task.reservationId! } })).toMatchObject({
      state: 'released',
    });
    expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: c.ws.id } })).balance).toBe(10_000_000n);
    expect(await ctx.db.apiKey.findUniqueOrThrow({ where: { id: c.key.id } })).toMatchObject({
      reserved: 0n,
      spent: 0n,
    });
    expect(await job('tasks', `task.cancel/${id}`)).toBeUndefined();
    expect(await job('callbacks', `callback.deliver/${id}/1`)).toBeUndefined();

    // Once ended it cannot be canceled again; another workspace cannot cancel it at all (nor learn it exists).
    const again = await errorOf(await post(`/api/v1/tasks/${id}/cancel`, c.secret), 409, 'task_not_cancelable');
    expect(again.message).toContain('canceled');
    const other = await makeCustomer(ctx.db);
    await errorOf(await post(`/api/v1/tasks/${id}/cancel`, other.secret), 404, 'task_not_found');
    await errorOf(await post('/api/v1/tasks/tsk_nope/cancel', c.secret), 404, 'task_not_found');
  });

  it("another workspace's live task is 404 and stays as it was", async () => {
    const owner = await makeCustomer(ctx.db);
    const id = await newTask(owner);
    await errorOf(await post(`/api/v1/tasks/${id}/cancel`, (await makeCustomer(ctx.db)).secret), 404, 'task_not_found');
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'queued' });
  });

  it('with a callback_url: the callback is queued (attempt 1); a submitted task: provider job canceled', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await newTask(c, { callback: true });
    await submit(id);
    const res = await post(`/api/v1/tasks/${id}/cancel`, c.secret);
    expect(res.status).toBe(200);
    const answered = await jsonOf(res);
    expect(answered).toMatchObject({
      status: 'canceled',
      callback: { url: `${receiver.url}/hooks`, state: 'pending' },
    });
    expect(answered).toEqual(await jsonOf(await get(`/api/v1/tasks/${id}`, c.secret)));
    const cancelJob = await job('tasks', `task.cancel/${id}`);
    expect(cancelJob?.data).toMatchObject({ taskId: id, workspaceId: c.ws.id });
    const deliver = await job('callbacks', `callback.deliver/${id}/1`);
    expect(deliver?.data).toMatchObject({ taskId: id, attempt: 1, workspaceId: c.ws.id });
  });

  it('a task whose result is recorded is not cancelable (the success won): 409, and it stays charged', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await newTask(c, { video: true });
    await submit(id);
    await taskRepository.recordOutput(
      ctx.db,
      id,
      { outputs: [{ kind: 'video', url: 'https://provider.example/x.mp4', archive_status: 'pending' }] },
      VIDEO_PRICE * 2n,
    );
    const error = await errorOf(await post(`/api/v1/tasks/${id}/cancel`, c.secret), 409, 'task_not_cancelable');
    expect(error.message).toContain('running');
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id } })).toMatchObject({
      status: 'running',
      cost: VIDEO_PRICE * 2n,
    });
  });
});

describe('deliveries and redelivery', () => {
  it('lists every attempt of the task in order', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await newTask(c, { callback: true });
    expect(await post(`/api/v1/tasks/${id}/cancel`, c.secret).then((r) => r.status)).toBe(200);
    const url = `${receiver.url}/hooks`;
    const at = new Date(Date.now() - 60_000);
    await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: {
        workspaceId: c.ws.id,
        taskId: id,
        attempt: 2,
        deliveryId: deliveryIdFor(id, 2),
        url,
        statusCode: 200,
        durationMs: 12,
        error: null,
        responseHead: 'ok',
        at: new Date(at.getTime() + 30_000),
      },
      decidedOn: { callbackRoundStart: 1 },
      step: null,
    });
    await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: {
        workspaceId: c.ws.id,
        taskId: id,
        attempt: 1,
        deliveryId: deliveryIdFor(id, 1),
        url,
        statusCode: 503,
        durationMs: 40,
        error: 'receiver answered 503',
        responseHead: 'busy',
        at,
      },
      decidedOn: { callbackRoundStart: 1 },
      step: null,
    });

    const res = await get(`/api/v1/tasks/${id}/deliveries`, c.secret);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({
      object: 'list',
      task_id: id,
      callback_url: url,
      state: 'pending',
      data: [
        {
          delivery_id: deliveryIdFor(id, 1),
          attempt: 1,
          url,
          status_code: 503,
          duration_ms: 40,
          error: 'receiver answered 503',
          response_head: 'busy',
          created_at: at.toISOString(),
        },
        {
          delivery_id: deliveryIdFor(id, 2),
          attempt: 2,
          url,
          status_code: 200,
          duration_ms: 12,
          error: null,
          response_head: 'ok',
          created_at: new Date(at.getTime() + 30_000).toISOString(),
        },
      ],
    });
    await errorOf(
      await get(`/api/v1/tasks/${id}/deliveries`, (await makeCustomer(ctx.db)).secret),
      404,
      'task_not_found',
    );
    // A task without a callback has an empty log.
    const plain = await newTask(c);
    expect(await jsonOf(await get(`/api/v1/tasks/${plain}/deliveries`, c.secret))).toEqual({
      object: 'list',
      task_id: plain,
      callback_url: null,
      state: 'none',
      data: [],
    });
  });

  it('409 while the task runs or when it has no callback_url; 404 for another workspace', async () => {
    const c = await makeCustomer(ctx.db);
    const live = await newTask(c, { callback: true });
    const liveError = await errorOf(
      await post(`/api/v1/tasks/${live}/redeliver`, c.secret),
      409,
      'callback_not_redeliverable',
    );
    expect(liveError.message).toContain('queued');
    await submit(live);
    expect(
      (await errorOf(await post(`/api/v1/tasks/${live}/redeliver`, c.secret), 409, 'callback_not_redeliverable'))
        .message,
    ).toContain('running');

    const silent = await newTask(c);
    await post(`/api/v1/tasks/${silent}/cancel`, c.secret);
    expect(
      (await errorOf(await post(`/api/v1/tasks/${silent}/redeliver`, c.secret), 409, 'callback_not_redeliverable'))
        .message,
    ).toContain('no callback_url');

    const other = await makeCustomer(ctx.db);
    await errorOf(await post(`/api/v1/tasks/${live}/redeliver`, other.secret), 404, 'task_not_found');
    await errorOf(await post('/api/v1/tasks/tsk_x/redeliver', c.secret), 404, 'task_not_found');
  });

  it('a finished task: 202 with the next round, its first attempt queued to run now', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await newTask(c, { callback: true });
    await post(`/api/v1/tasks/${id}/cancel`, c.secret);
    const url = `${receiver.url}/hooks`;
    for (const attempt of [1, 2]) {
      await taskRepository.recordDeliveryAttempt(ctx.db, {
        input: {
          workspaceId: c.ws.id,
          taskId: id,
          attempt,
          deliveryId: deliveryIdFor(id, attempt),
          url,
          statusCode: 500,
          durationMs: 5,
          error: 'receiver answered 500',
          responseHead: null,
          at: new Date(),
        },
        decidedOn: { callbackRoundStart: 1 },
        step: null,
      });
    }
    await taskRepository.recordDeliveryAttempt(ctx.db, {
      taskId: id,
      decidedOn: { callbackRoundStart: 1 },
      step: { attempt: 2, to: 'parked' },
    });

    // The workspace's secrets made (as a customer's first read makes them): the round's job carries none of them.
    const { secret } = await jsonOf(await get('/api/v1/me/callback-secret', c.secret));
    const res = await post(`/api/v1/tasks/${id}/redeliver`, c.secret);
    expect(res.status).toBe(202);
    expect(await jsonOf(res)).toEqual({
      object: 'delivery',
      task_id: id,
      attempt: 3,
      delivery_id: deliveryIdFor(id, 3),
    });
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id } })).toMatchObject({
      callbackState: 'pending',
      callbackRoundStart: 3,
    });
    const deliver = await job('callbacks', `callback.deliver/${id}/3`);
    expect(deliver?.data).toMatchObject({ taskId: id, attempt: 3, workspaceId: c.ws.id });
    // Ids and the envelope only: the attempt reads the task.
    expect(
      Object.keys(deliver!.data).filter(
        (k) => !['taskId', 'attempt', 'workspaceId', 'requestId', 'trace', 'v'].includes(k),
      ),
    ).toEqual([]);
    expect(JSON.stringify(deliver!.data)).not.toContain(secret);
    expect(await deliver!.getState()).toBe('waiting');
  });
});

describe('the callback secret', () => {
  it('is made on first read and stable after; rotation answers a new one, the old one signing 24 h more', async () => {
    const c = await makeCustomer(ctx.db);
    const first = await jsonOf(await get('/api/v1/me/callback-secret', c.secret));
    expect(first).toEqual({
      object: 'callback_secret',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      previous_secret_expires_at: null,
      rotated_at: null,
      created_at: expect.any(String),
    });
    expect(await jsonOf(await get('/api/v1/me/callback-secret', c.secret))).toEqual(first);
    // Each workspace has its own.
    expect(
      (await jsonOf(await get('/api/v1/me/callback-secret', (await makeCustomer(ctx.db)).secret))).secret,
    ).not.toBe(first.secret);

    const before = Date.now();
    const rotateRes = await post('/api/v1/me/callback-secret/rotate', c.secret);
    expect(rotateRes.status).toBe(200);
    const rotated = await jsonOf(rotateRes);
    expect(rotated).toMatchObject({
      object: 'callback_secret',
      secret: expect.stringMatching(/^whsec_/),
      created_at: first.created_at,
    });
    expect(rotated.secret).not.toBe(first.secret);
    const overlapEnd = Date.parse(rotated.previous_secret_expires_at);
    expect(overlapEnd).toBeGreaterThanOrEqual(before + 86_400_000 - 1_000);
    expect(overlapEnd).toBeLessThanOrEqual(Date.now() + 86_400_000);
    expect(Date.parse(rotated.rotated_at)).toBeGreaterThanOrEqual(before - 1_000);
    expect(await jsonOf(await get('/api/v1/me/callback-secret', c.secret))).toEqual(rotated);
    // The previous secret signs alongside the new one during the overlap.
    expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, c.ws.id, () => 'unused')).toEqual([
      rotated.secret,
      first.secret,
    ]);
  });

  it('racing first reads agree on one secret', async () => {
    const c = await makeCustomer(ctx.db);
    const seen = await Promise.all(
      Array.from({ length: 8 }, () => callbackRepository.secret(ctx.db, ctx.secrets, c.ws.id, newCallbackSecret)),
    );
    const stored = await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: c.ws.id } });
    const opened = ctx.secrets.open(stored.secret, secretAad('callback-secret', c.ws.id));
    expect(seen.map((s) => s.secret)).toEqual(seen.map(() => opened));
  });

  it('needs tasks.write', async () => {
    const reader = await makeCustomer(ctx.db, { scopes: ['tasks.read'] });
    await errorOf(await get('/api/v1/me/callback-secret', reader.secret), 403, 'insufficient_scope');
    await errorOf(await post('/api/v1/me/callback-secret/rotate', reader.secret), 403, 'insufficient_scope');
    expect(await ctx.db.callbackSecret.count({ where: { workspaceId: reader.ws.id } })).toBe(0);
  });
});
