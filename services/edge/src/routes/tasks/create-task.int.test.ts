// POST /api/v1/<provider>/<operation> over a real socket, against real Postgres and Redis: what a creation writes
// (the queued task, its hold, its task.submit job), every way a body or model can be refused (leaving nothing),
// money (402, Idempotency-Key, a race against a spending cap). No task runner runs here: jobs stay queued.
import { taskRepository } from '@gensvc/db';
import { createQueues } from '@gensvc/queue';
import { jsonOf, makeCustomer, sampleMedia as sample, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { upload } from '../files/files-test-support';
import { MAX_PROMPT_CHARS } from './schema';
import {
  createTask,
  errorOf,
  IMAGE_PRICE,
  MODELS,
  seedTaskModels,
  VIDEO_PRICE,
  workspaceState,
} from './tasks-test-support';

const ctx = useTestContext({ TASK_DEADLINE: '10m' });
let edge: EdgeUnderTest;

beforeAll(async () => {
  edge = await startEdge(ctx);
  await seedTaskModels(ctx.db);
});
afterAll(() => edge.close());

const submitJob = (taskId: string) => edge.deps.queues.get('tasks').getJob(`task.submit/${taskId}`);
const jobCount = async () =>
  Object.values(await edge.deps.queues.get('tasks').getJobCounts()).reduce((a, b) => a + b, 0);

async function uploadedFile(secret: string, bytes: Buffer, filename: string): Promise<string> {
  const res = await upload(edge.url, secret, bytes, { filename });
  expect(res.status).toBe(200);
  return (await jsonOf(res)).id;
}

describe('a valid creation', () => {
  let c: Awaited<ReturnType<typeof makeCustomer>>;
  let photo: string;
  beforeAll(async () => {
    c = await makeCustomer(ctx.db);
    photo = await uploadedFile(c.secret, sample.png(64, 48), 'start.png');
  });

  it.each<[string, string, Record<string, unknown>, bigint, object]>([
    ['text-to-image', MODELS.image, {}, IMAGE_PRICE, { width: 1024, height: 1024 }],
    ['text-to-image', MODELS.image, { size: '512x768' }, IMAGE_PRICE, { width: 512, height: 768 }],
    [
      'image-to-image',
      MODELS.image,
      { image: 'FILE' },
      IMAGE_PRICE,
      { width: 1024, height: 1024, image: { file_id: 'FILE' } },
    ],
    ['text-to-video', MODELS.video, {}, VIDEO_PRICE * 5n, { width: 1280, height: 720, duration_seconds: 5 }],
    [
      'text-to-video',
      MODELS.video,
      { duration_seconds: 12, size: '1920x1080' },
      VIDEO_PRICE * 12n,
      { width: 1920, height: 1080, duration_seconds: 12 },
    ],
    [
      'image-to-video',
      MODELS.video,
      { image: 'FILE', duration_seconds: 3 },
      VIDEO_PRICE * 3n,
      { width: 1280, height: 720, duration_seconds: 3, image: { file_id: 'FILE' } },
    ],
  ])('%s %s %j → 202, the queued task, its hold and its job', async (operation, model, extra, price, input) => {
    const fill = (o: object) => JSON.parse(JSON.stringify(o).replaceAll('"FILE"', JSON.stringify(photo)));
    const before = await workspaceState(ctx.db, c.ws.id);
    const started = Date.now();
    const res = await createTask(edge.url, c.secret, `sim/${operation}`, {
      model,
      prompt: '  a lighthouse at dusk  ',
      ...fill(extra),
    });
    const body = await jsonOf(res);
    expect(res.status).toBe(202);
    const id = body.task_id as string;
    expect(id).toMatch(/^tsk_[0-9A-Za-z]{22}$/);
    expect(res.headers.get('location')).toBe(`/api/v1/tasks/${id}`);
    expect(body).toEqual({
      object: 'task',
      task_id: id,
      status: 'queued',
      model,
      operation,
      output: null,
      cost: { amount: Number(price) / 1e6, currency: 'USD' },
      error: null,
      created_at: expect.any(String),
      started_at: null,
      completed_at: null,
      callback: null,
      attempts: [],
    });

    const task = await ctx.db.task.findUniqueOrThrow({ where: { id } });
    expect(task).toMatchObject({
      workspaceId: c.ws.id,
      apiKeyId: c.key.id,
      status: 'queued',
      model,
      operation,
      reserved: price,
      callbackUrl: null,
      requestId: res.headers.get('x-request-id'),
    });
    expect(task.input).toEqual({ prompt: 'a lighthouse at dusk', width: 1024, height: 1024, ...fill(input) });
    expect(task.deadlineAt!.getTime()).toBeGreaterThanOrEqual(started + 600_000 - 1_000);
    expect(task.deadlineAt!.getTime()).toBeLessThanOrEqual(Date.now() + 600_000);
    const hold = await ctx.db.reservation.findUniqueOrThrow({ where: { id: task.reservationId! } });
    expect(hold).toMatchObject({ state: 'held', amount: price, workspaceId: c.ws.id, apiKeyId: c.key.id });
    const after = await workspaceState(ctx.db, c.ws.id);
    expect(after).toEqual({
      tasks: before.tasks + 1,
      reservations: before.reservations + 1,
      balance: before.balance - price,
      keys: [{ reserved: before.keys[0]!.reserved + price, spent: 0n }],
    });

    const job = await submitJob(id);
    expect(job).toBeDefined();
    expect(job!.name).toBe('task.submit');
    expect(job!.data).toMatchObject({ taskId: id, workspaceId: c.ws.id, requestId: task.requestId });
    // Ids and the envelope only: the submit reads the row.
    expect(
      Object.keys(job!.data).filter((k) => !['taskId', 'workspaceId', 'requestId', 'trace', 'v'].includes(k)),
    ).toEqual([]);
    expect(await job!.getState()).toBe('waiting');
  });
});

describe('refusals: 400 naming the field (or 404 for a file), nothing held, written or queued', () => {
  let c: Awaited<ReturnType<typeof makeCustomer>>;
  let photo: string;
  let pdf: string;
  let foreignPhoto: string;
  beforeAll(async () => {
    c = await makeCustomer(ctx.db);
    photo = await uploadedFile(c.secret, sample.png(32, 32), 'p.png');
    pdf = await uploadedFile(c.secret, sample.pdf(), 'doc.pdf');
    foreignPhoto = await uploadedFile((await makeCustomer(ctx.db)).secret, sample.png(32, 32), 'theirs.png');
  });

  const image = { model: MODELS.image, prompt: 'a cat' };
  const video = { model: MODELS.video, prompt: 'a cat' };
  it.each<[string, string, unknown, number, string, string | null]>([
    ['no model', 'text-to-image', { prompt: 'x' }, 400, 'invalid_request', 'model'],
    ['a numeric model', 'text-to-image', { ...image, model: 7 }, 400, 'invalid_request', 'model'],
    ['no prompt', 'text-to-image', { model: MODELS.image }, 400, 'invalid_request', 'prompt'],
    ['a blank prompt', 'text-to-image', { ...image, prompt: ' \n\t ' }, 400, 'invalid_request', 'prompt'],
    [
      'a prompt too long',
      'text-to-image',
      { ...image, prompt: 'x'.repeat(MAX_PROMPT_CHARS + 1) },
      400,
      'invalid_request',
      'prompt',
    ],
    [
      'a prompt that is not text',
      'text-to-video',
      { ...video, prompt: ['a', 'cat'] },
      400,
      'invalid_request',
      'prompt',
    ],
    ['a size without x', 'text-to-image', { ...image, size: '1024' }, 400, 'invalid_request', 'size'],
    ['a size that is a word', 'text-to-image', { ...image, size: 'large' }, 400, 'invalid_request', 'size'],
    ['a size below 64 px', 'text-to-image', { ...image, size: '63x512' }, 400, 'invalid_request', 'size'],
    ['a size above 4096 px', 'text-to-video', { ...video, size: '1280x4097' }, 400, 'invalid_request', 'size'],
    ['a negative size', 'text-to-image', { ...image, size: '-512x512' }, 400, 'invalid_request', 'size'],
    ['a numeric size', 'text-to-image', { ...image, size: 1024 }, 400, 'invalid_request', 'size'],
    [
      'duration_seconds on an image operation',
      'text-to-image',
      { ...image, duration_seconds: 5 },
      400,
      'invalid_request',
      'duration_seconds',
    ],
    [
      'duration_seconds 0',
      'text-to-video',
      { ...video, duration_seconds: 0 },
      400,
      'invalid_request',
      'duration_seconds',
    ],
    [
      'duration_seconds 61',
      'text-to-video',
      { ...video, duration_seconds: 61 },
      400,
      'invalid_request',
      'duration_seconds',
    ],
    [
      'a fractional duration',
      'text-to-video',
      { ...video, duration_seconds: 2.5 },
      400,
      'invalid_request',
      'duration_seconds',
    ],
    [
      'a duration as text',
      'image-to-video',
      { ...video, image: 'PHOTO', duration_seconds: '5' },
      400,
      'invalid_request',
      'duration_seconds',
    ],
    ['an image on text-to-image', 'text-to-image', { ...image, image: 'PHOTO' }, 400, 'invalid_request', 'image'],
    [
      'an image_url on text-to-video',
      'text-to-video',
      { ...video, image_url: 'https://93.184.216.34/a.png' },
      400,
      'invalid_request',
      'image_url',
    ],
    ['no image on image-to-image', 'image-to-image', image, 400, 'invalid_request', 'image'],
    ['no image on image-to-video', 'image-to-video', video, 400, 'invalid_request', 'image'],
    [
      'both image and image_url',
      'image-to-image',
      { ...image, image: 'PHOTO', image_url: 'PHOTO' },
      400,
      'invalid_request',
      'image_url',
    ],
    ['a numeric image', 'image-to-image', { ...image, image: 42 }, 400, 'invalid_request', 'image'],
    [
      'a numeric callback_url',
      'text-to-image',
      { ...image, callback_url: 443 },
      400,
      'invalid_request',
      'callback_url',
    ],
    ['an empty callback_url', 'text-to-image', { ...image, callback_url: '' }, 400, 'invalid_request', 'callback_url'],
    ['an unknown field', 'text-to-image', { ...image, seed: 7 }, 400, 'invalid_request', 'seed'],
    ['a body that is an array', 'text-to-image', [image], 400, 'invalid_request', null],
    ['an unknown model', 'text-to-image', { ...image, model: 'sim/nope' }, 404, 'model_not_found', 'model'],
    ['a chat model', 'text-to-image', { ...image, model: MODELS.chat }, 400, 'model_not_supported', 'model'],
    [
      'a video model for an image',
      'text-to-image',
      { ...image, model: MODELS.video },
      400,
      'model_not_supported',
      'model',
    ],
    [
      'an image model for a video',
      'image-to-video',
      { ...video, model: MODELS.image, image: 'PHOTO' },
      400,
      'model_not_supported',
      'model',
    ],
    ['a disabled model', 'text-to-image', { ...image, model: MODELS.disabled }, 400, 'model_not_supported', 'model'],
    [
      'a model of another provider',
      'text-to-image',
      { ...image, model: MODELS.otherProvider },
      400,
      'model_not_supported',
      'model',
    ],
    [
      'a model with no task channel',
      'text-to-image',
      { ...image, model: MODELS.openaiOnly },
      400,
      'model_not_supported',
      'model',
    ],
    [
      'a model whose task channel is off',
      'text-to-image',
      { ...image, model: MODELS.channelOff },
      400,
      'model_not_supported',
      'model',
    ],
    ["another workspace's file", 'image-to-image', { ...image, image: 'FOREIGN' }, 404, 'file_not_found', 'image'],
    ['a malformed file id', 'image-to-video', { ...video, image_url: 'file_nope' }, 404, 'file_not_found', 'image_url'],
    ['a file that is not an image', 'image-to-image', { ...image, image: 'PDF' }, 400, 'invalid_image', 'image'],
    [
      'an http image URL',
      'image-to-image',
      { ...image, image: 'http://93.184.216.34/a.png' },
      400,
      'invalid_image_url',
      'image',
    ],
    [
      'an image URL on a private address',
      'image-to-video',
      { ...video, image_url: 'https://10.0.0.1/a.png' },
      400,
      'invalid_image_url',
      'image_url',
    ],
    [
      'an image URL on another port',
      'image-to-image',
      { ...image, image: 'https://93.184.216.34:8443/a.png' },
      400,
      'invalid_image_url',
      'image',
    ],
    [
      'an image reference that is no URL',
      'image-to-image',
      { ...image, image: 'cat.png' },
      400,
      'invalid_image_url',
      'image',
    ],
  ])('%s (%s)', async (_what, operation, body, status, code, param) => {
    const filled = JSON.parse(
      JSON.stringify(body)
        .replaceAll('"PHOTO"', JSON.stringify(photo))
        .replaceAll('"PDF"', JSON.stringify(pdf))
        .replaceAll('"FOREIGN"', JSON.stringify(foreignPhoto)),
    );
    const [before, jobsBefore] = await Promise.all([workspaceState(ctx.db, c.ws.id), jobCount()]);
    const res = await createTask(edge.url, c.secret, `sim/${operation}`, filled);
    const error = await errorOf(res, status, code);
    expect(error.param).toBe(param);
    expect(error.request_id).toBe(res.headers.get('x-request-id'));
    if (code === 'invalid_request' && param) expect(error.message).toContain(param);
    expect(await workspaceState(ctx.db, c.ws.id)).toEqual(before);
    expect(await jobCount()).toBe(jobsBefore);
  });

  it('names the right path for a model under another provider', async () => {
    const res = await createTask(edge.url, c.secret, 'acme/text-to-image', { model: MODELS.image, prompt: 'x' });
    const error = await errorOf(res, 400, 'model_not_supported');
    expect(error.message).toContain('/api/v1/sim/text-to-image');
  });

  it('answers malformed JSON with 400 invalid_json, and a body over 64 KiB with 413', async () => {
    await errorOf(await createTask(edge.url, c.secret, 'sim/text-to-image', '{"model":'), 400, 'invalid_json');
    await errorOf(
      await createTask(edge.url, c.secret, 'sim/text-to-image', { model: MODELS.image, prompt: 'x'.repeat(70_000) }),
      413,
      'payload_too_large',
    );
    expect(await ctx.db.task.count({ where: { workspaceId: c.ws.id } })).toBe(0);
  });

  it('401 without a key, 403 without tasks.write', async () => {
    const anonymous = await fetch(`${edge.url}/api/v1/sim/text-to-image`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(image),
    });
    await errorOf(anonymous, 401, 'missing_api_key');
    const reader = await makeCustomer(ctx.db, { scopes: ['tasks.read'] });
    const error = await errorOf(
      await createTask(edge.url, reader.secret, 'sim/text-to-image', image),
      403,
      'insufficient_scope',
    );
    expect(error.param).toBe('tasks.write');
  });

  it('leaves other routes of the same shape alone', async () => {
    // POST /api/v1/sim/something-else is no task operation.
    await errorOf(await createTask(edge.url, c.secret, 'sim/text-to-music', image), 404, 'route_not_found');
  });
});

describe('money', () => {
  const body = { model: MODELS.image, prompt: 'a red fox' };

  it('402 when the balance or the key cap cannot hold the price, with nothing left behind', async () => {
    const poor = await makeCustomer(ctx.db, { balance: IMAGE_PRICE - 1n });
    const capped = await makeCustomer(ctx.db, { spendCap: IMAGE_PRICE - 1n });
    const jobsBefore = await jobCount();
    await errorOf(await createTask(edge.url, poor.secret, 'sim/text-to-image', body), 402, 'insufficient_balance');
    await errorOf(await createTask(edge.url, capped.secret, 'sim/text-to-image', body), 402, 'spending_cap_exhausted');
    expect(await workspaceState(ctx.db, poor.ws.id)).toEqual({
      tasks: 0,
      reservations: 0,
      balance: IMAGE_PRICE - 1n,
      keys: [{ reserved: 0n, spent: 0n }],
    });
    expect(await workspaceState(ctx.db, capped.ws.id)).toEqual({
      tasks: 0,
      reservations: 0,
      balance: 10_000_000n,
      keys: [{ reserved: 0n, spent: 0n }],
    });
    expect(await jobCount()).toBe(jobsBefore);
  });

  it('prices a video by its seconds: a balance for 4 s takes 4 s and refuses the default 5 s', async () => {
    const c = await makeCustomer(ctx.db, { balance: VIDEO_PRICE * 4n });
    await errorOf(
      await createTask(edge.url, c.secret, 'sim/text-to-video', { model: MODELS.video, prompt: 'waves' }),
      402,
      'insufficient_balance',
    );
    const res = await createTask(edge.url, c.secret, 'sim/text-to-video', {
      model: MODELS.video,
      prompt: 'waves',
      duration_seconds: 4,
    });
    expect(res.status).toBe(202);
    expect(await workspaceState(ctx.db, c.ws.id)).toMatchObject({ tasks: 1, balance: 0n });
  });

  it('Idempotency-Key: the same request gets the same 202 (and Location), one task; another body is 409', async () => {
    const c = await makeCustomer(ctx.db);
    const headers = { 'idempotency-key': 'create-fox-1' };
    const first = await createTask(edge.url, c.secret, 'sim/text-to-image', body, headers);
    const firstBody = await jsonOf(first);
    expect(first.status).toBe(202);
    const again = await createTask(edge.url, c.secret, 'sim/text-to-image', body, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(`/api/v1/tasks/${firstBody.task_id}`);
    expect(await jsonOf(again)).toEqual(firstBody);
    expect(await workspaceState(ctx.db, c.ws.id)).toMatchObject({
      tasks: 1,
      reservations: 1,
      balance: 10_000_000n - IMAGE_PRICE,
    });
    const other = await createTask(edge.url, c.secret, 'sim/text-to-image', { ...body, prompt: 'a blue fox' }, headers);
    await errorOf(other, 409, 'idempotency_key_reused');
    // The same key on another operation's path is another request, too.
    await errorOf(
      await createTask(edge.url, c.secret, 'sim/image-to-image', body, headers),
      409,
      'idempotency_key_reused',
    );
    expect(await ctx.db.task.count({ where: { workspaceId: c.ws.id } })).toBe(1);
  });

  it('a race: 200 concurrent creations against a cap for 50, in groups → exactly 50 tasks, cap held', async () => {
    const cap = IMAGE_PRICE * 50n;
    const c = await makeCustomer(ctx.db, { spendCap: cap });
    const createMany = jest.spyOn(taskRepository, 'createMany');
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        createTask(edge.url, c.secret, 'sim/text-to-image', { ...body, prompt: `fox ${i}` }),
      ),
    );
    // The key's creations went in groups: every one was written by a statement, fewer statements than creations.
    const groups = createMany.mock.calls.map(([, inputs]) => inputs.length);
    createMany.mockRestore();
    expect(groups.reduce((a, b) => a + b, 0)).toBe(200);
    expect(groups.length).toBeLessThan(200);
    const statuses = answers.map((r) => r.status);
    const codes = await Promise.all(
      answers.map(async (r) => (r.status === 202 ? 'created' : (await jsonOf(r)).error.code)),
    );
    expect(statuses.filter((s) => s === 202)).toHaveLength(50);
    expect(statuses.filter((s) => s === 402)).toHaveLength(150);
    expect(new Set(codes.filter((x) => x !== 'created'))).toEqual(new Set(['spending_cap_exhausted']));
    const key = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: c.key.id } });
    expect({ reserved: key.reserved, spent: key.spent }).toEqual({ reserved: cap, spent: 0n });
    expect(await workspaceState(ctx.db, c.ws.id)).toMatchObject({
      tasks: 50,
      reservations: 50,
      balance: 10_000_000n - cap,
    });
    const tasks = await ctx.db.task.findMany({ where: { workspaceId: c.ws.id }, select: { id: true } });
    const jobs = await Promise.all(tasks.map((t) => submitJob(t.id)));
    expect(jobs.filter(Boolean)).toHaveLength(50);
  });
});

describe('the queue cannot take the job', () => {
  it('still answers 202: the task is held and queued in Postgres, where the reconciler finds it', async () => {
    // Queues that are closed (as during shutdown) refuse every add.
    const queues = createQueues({
      connection: ctx.redis,
      prefix: ctx.config.queuePrefix,
      logger: { info() {}, warn() {}, error() {} },
    });
    const broken = await startEdge(ctx, { queues });
    await queues.close();
    try {
      const c = await makeCustomer(ctx.db);
      const res = await createTask(broken.url, c.secret, 'sim/text-to-image', { model: MODELS.image, prompt: 'x' });
      expect(res.status).toBe(202);
      const { task_id } = await jsonOf(res);
      expect(await ctx.db.task.findUniqueOrThrow({ where: { id: task_id } })).toMatchObject({
        status: 'queued',
        reserved: IMAGE_PRICE,
      });
      expect(await submitJob(task_id)).toBeUndefined();
    } finally {
      await broken.close();
    }
  });
});
