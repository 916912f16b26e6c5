// `Prefer: wait` and the caller's deadline (deadline_seconds, Cancel-After) end to end: the edge on a real socket, the
// task runner, archiver and callback dispatcher on real queues, real Postgres, Redis and S3, the upstream-sim speaking
// Replicate's protocol over HTTPS, and an HTTPS callback receiver. A slow task is a sim job told to take long.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TaskDeadline } from '@gensvc/contracts';
import { createLogger } from '@gensvc/observability';
import { closeWorkers, jobIdFor } from '@gensvc/queue';
import {
  addSimModel,
  eventually,
  jsonOf,
  makeKey,
  makeWorkspace,
  sharedTestCa,
  startTlsServer,
  useTestContext,
  type TlsTestServer,
} from '@gensvc/testing';
import { verifyCallback } from '@gensvc/webhooks';
import { startArchiveWorker } from '../../archiver/src/archive-worker';
import { startDispatcherWorker } from '../../callback-dispatcher/src/dispatcher-worker';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { startWorker, type TaskWorkerUnderTest } from '../../task-runner/src/worker-under-test';
import { startSim, type Sim } from '../../upstream-sim/src/index';

const MAX_WAITERS = 3;
const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  FILE_BASE_URL: 'https://files.gensvc.test',
  TASK_POLL_SCHEDULE: '100ms,100ms,200ms',
  CALLBACK_RETRY_SCHEDULE: '0,1s,2s,3s,5s',
  CALLBACK_TIMEOUT_MS: '3000',
  TASK_WAIT_MAX_WAITERS: String(MAX_WAITERS),
});

const PRICE = 40_000n;
const BALANCE = 10_000_000n;
const FAST = 'sim/fast-1';
const SLOW = 'sim/slow-1';

let sim: Sim;
let receiver: TlsTestServer;
let edge: EdgeUnderTest;
let runner: TaskWorkerUnderTest;
let workers: ReturnType<typeof startArchiveWorker>[] = [];

interface Callback {
  taskId: string;
  body: { status: string; error: { code: string; message: string } | null };
  headers: IncomingMessage['headers'];
  raw: Buffer;
}
const callbacks: Callback[] = [];

function receive(req: IncomingMessage, res: ServerResponse) {
  const parts: Buffer[] = [];
  req.on('data', (d: Buffer) => parts.push(d));
  req.on('end', () => {
    const raw = Buffer.concat(parts);
    const body = JSON.parse(raw.toString('utf8'));
    callbacks.push({ taskId: body.task_id, body, headers: req.headers, raw });
    res.statusCode = 204;
    res.end();
  });
}

beforeAll(async () => {
  const { ca, leaf } = sharedTestCa();
  sim = await startSim({ outputs: { tls: { key: leaf.keyPem, cert: leaf.certPem } }, taskDurationMs: 300 });
  receiver = await startTlsServer(receive);
  for (const [id, channel] of [
    [FAST, 'fast'],
    [SLOW, 'slow'],
  ] as const) {
    await addSimModel(ctx.db, sim.url, {
      id,
      kind: 'image',
      unitPrice: PRICE,
      channels: [{ name: channel, kind: 'replicate', upstreamModel: 'sim/image-1' }],
    });
  }
  edge = await startEdge(ctx, { outbound: { ca: ca.certPem } });
  runner = await startWorker(ctx);
  const logger = createLogger({ service: 'wait-deadline-test', level: 'silent' });
  const conn = { connection: ctx.redis, prefix: ctx.config.queuePrefix };
  const shared = { config: ctx.config, db: ctx.db, logger, queues: runner.queues, outbound: { ca: ca.certPem } };
  workers = [
    startArchiveWorker({ ...shared, s3: ctx.s3 }, conn, 4),
    startDispatcherWorker({ ...shared, secrets: ctx.secrets }, conn, 4),
  ];
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await closeWorkers(workers, 5_000);
  await runner?.close();
  await receiver?.close();
  await sim?.close();
});

afterEach(() => sim.faults.clear());

/** Jobs on the slow channel take this long: far past any wait or deadline below. */
const slowJobs = (durationMs = 60_000) => sim.faults.add({ channel: 'slow', job: { durationMs } });

async function caller() {
  const ws = await makeWorkspace(ctx.db, { balance: BALANCE });
  const { secret } = await makeKey(ctx.db, ws.id);
  return { ws, secret };
}

function create(
  secret: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) {
  return fetch(`${edge.url}/api/v1/sim/text-to-image`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt: 'a lighthouse at dawn', size: '256x256', ...body }),
    signal,
  });
}

const getTask = async (secret: string, id: string) =>
  jsonOf(await fetch(`${edge.url}/api/v1/tasks/${id}`, { headers: { authorization: `Bearer ${secret}` } }));

/** The envelope less its download link, which is signed afresh at every read. */
const unsigned = ({ output, ...rest }: { output: Record<string, unknown> | null }) => {
  if (!output) return { ...rest, output };
  const { download_url: _url, download_expires_at: _expires, ...kept } = output;
  return { ...rest, output: kept };
};

async function money(workspaceId: string) {
  const [ws, charges, held] = await Promise.all([
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
    ctx.db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' } }),
    ctx.db.reservation.count({ where: { workspaceId, state: 'held' } }),
  ]);
  return { balance: ws.balance, charges: charges.map((c) => -c.amount), held };
}

describe('Prefer: wait', () => {
  it('answers 200 with the completed envelope, the one GET gives, when the task ends within the wait', async () => {
    const { ws, secret } = await caller();
    const res = await create(secret, { model: FAST }, { Prefer: 'wait=30' });
    const body = await jsonOf(res);
    expect({ status: res.status, applied: res.headers.get('preference-applied') }).toEqual({
      status: 200,
      applied: 'wait=30',
    });
    expect(body).toMatchObject({ status: 'completed', error: null, output: { archive_status: 'archived' } });
    expect(body.output.download_url).toEqual(expect.any(String));
    expect(unsigned(body)).toEqual(unsigned(await getTask(secret, body.task_id)));
    expect(edge.deps.taskWaits.size).toBe(0);
    expect(await money(ws.id)).toEqual({ balance: BALANCE - PRICE, charges: [PRICE], held: 0 });
  });

  it('answers 202 with the queued envelope once the wait runs out; the task runs on', async () => {
    slowJobs(3_000);
    const { secret } = await caller();
    const started = performance.now();
    const res = await create(secret, { model: SLOW }, { Prefer: 'wait=1' });
    const waited = performance.now() - started;
    const body = await jsonOf(res);
    expect(res.status).toBe(202);
    expect(res.headers.get('preference-applied')).toBe('wait=1');
    expect(res.headers.get('location')).toBe(`/api/v1/tasks/${body.task_id}`);
    expect(body).toMatchObject({ status: 'queued', output: null, started_at: null });
    expect(waited).toBeGreaterThanOrEqual(1_000);
    expect(waited).toBeLessThan(2_500);
    expect(edge.deps.taskWaits.size).toBe(0);
    await eventually(async () => (await getTask(secret, body.task_id)).status === 'completed', 'the task to complete');
  });

  it('clamps a wait past 60 s to 60, and ignores a preference it cannot read', async () => {
    const { secret } = await caller();
    const clamped = await create(secret, { model: FAST }, { Prefer: 'respond-async, WAIT=3600' });
    expect({ status: clamped.status, applied: clamped.headers.get('preference-applied') }).toEqual({
      status: 200,
      applied: 'wait=60',
    });
    for (const prefer of ['wait=soon', 'wait=-1', 'wait=2.5', 'handling=lenient']) {
      const started = performance.now();
      const res = await create(secret, { model: FAST }, { Prefer: prefer });
      expect({ prefer, status: res.status, applied: res.headers.get('preference-applied') }).toEqual({
        prefer,
        status: 202,
        applied: null,
      });
      expect(performance.now() - started).toBeLessThan(1_000);
    }
  });

  it('a caller who leaves mid-wait changes nothing: no waiter left, the task completes, charged once', async () => {
    slowJobs(3_000);
    const { ws, secret } = await caller();
    const abort = new AbortController();
    const key = { 'Idempotency-Key': 'leave-mid-wait' };
    const submits = sim.requests().filter((r) => r.channel === 'slow').length;
    const leaving = create(secret, { model: SLOW }, { Prefer: 'wait=60', ...key }, abort.signal);
    // Once the provider has the job, the caller is past the creation and waiting.
    await eventually(() => sim.requests().filter((r) => r.channel === 'slow').length > submits, 'the task submitted');
    expect(edge.deps.taskWaits.size).toBe(1);
    abort.abort();
    await expect(leaving).rejects.toThrow();
    await eventually(() => edge.deps.taskWaits.size === 0 && edge.deps.taskWaits.tasks === 0, 'no waiter left');

    const [task] = await ctx.db.task.findMany({ where: { workspaceId: ws.id } });
    await eventually(async () => (await getTask(secret, task!.id)).status === 'completed', 'the task to complete');
    // A retry under the same key finds that task (what the caller would have been answered), and makes no other.
    const retry = await create(secret, { model: SLOW }, { Prefer: 'wait=60', ...key });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((await jsonOf(retry)).task_id).toBe(task!.id);
    expect(await ctx.db.task.count({ where: { workspaceId: ws.id } })).toBe(1);
    expect(await money(ws.id)).toEqual({ balance: BALANCE - PRICE, charges: [PRICE], held: 0 });
  });

  it('answers a waiting caller with the task canceled by request, at once', async () => {
    slowJobs();
    const { ws, secret } = await caller();
    const waiting = create(secret, { model: SLOW }, { Prefer: 'wait=30' });
    await eventually(() => edge.deps.taskWaits.size === 1, 'the caller to wait');
    const [task] = await eventually(async () => {
      const rows = await ctx.db.task.findMany({ where: { workspaceId: ws.id } });
      return rows.length ? rows : null;
    }, 'the task');
    const started = performance.now();
    const cancel = await fetch(`${edge.url}/api/v1/tasks/${task!.id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(cancel.status).toBe(200);
    const res = await waiting;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toMatchObject({ task_id: task!.id, status: 'canceled', error: null });
    expect(await money(ws.id)).toEqual({ balance: BALANCE, charges: [], held: 0 });
  });

  it(`holds at most ${MAX_WAITERS} callers; past that a creation answers 202 at once`, async () => {
    slowJobs();
    const { secret } = await caller();
    const abort = new AbortController();
    const waiting = Array.from({ length: MAX_WAITERS }, () =>
      create(secret, { model: SLOW }, { Prefer: 'wait=30' }, abort.signal).catch(() => null),
    );
    await eventually(() => edge.deps.taskWaits.size === MAX_WAITERS, 'the waits to fill up');
    const started = performance.now();
    const res = await create(secret, { model: SLOW }, { Prefer: 'wait=30' });
    expect({ status: res.status, applied: res.headers.get('preference-applied') }).toEqual({
      status: 202,
      applied: null,
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    abort.abort();
    await Promise.all(waiting);
    await eventually(() => edge.deps.taskWaits.size === 0, 'the waits to end');
  });
});

describe('deadlines', () => {
  it('cancels a task running at its deadline: provider job canceled, hold released, callback canceled', async () => {
    slowJobs();
    const { ws, secret } = await caller();
    const hook = `${receiver.url}/hooks/deadline`;
    const secrets = [
      (
        await jsonOf(
          await fetch(`${edge.url}/api/v1/me/callback-secret`, { headers: { authorization: `Bearer ${secret}` } }),
        )
      ).secret,
    ];
    // A waiting caller is answered with the canceled task as soon as the deadline ends it.
    const started = performance.now();
    const res = await create(secret, { model: SLOW, callback_url: hook }, { 'Cancel-After': '2s', Prefer: 'wait=20' });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(body).toMatchObject({
      status: 'canceled',
      output: null,
      cost: { amount: 0 },
      error: { code: 'deadline_exceeded', message: expect.stringContaining('2 s') },
    });

    const row = await ctx.db.task.findUniqueOrThrow({ where: { id: body.task_id } });
    // The deadline counts from the request's clock reading, a moment before the row's creation time.
    expect(row.cancelAfter!.getTime() - row.createdAt.getTime()).toBeGreaterThan(1_900);
    expect(row.cancelAfter!.getTime() - row.createdAt.getTime()).toBeLessThanOrEqual(2_000);
    expect(await money(ws.id)).toEqual({ balance: BALANCE, charges: [], held: 0 });
    expect((await ctx.db.reservation.findUniqueOrThrow({ where: { id: row.reservationId! } })).state).toBe('released');
    await eventually(
      () =>
        sim
          .requests()
          .some((r) => r.channel === 'slow' && r.path.endsWith('/cancel') && r.path.includes(row.upstreamId!)),
      'the provider job to be canceled',
    );

    const callback = await eventually(() => callbacks.find((c) => c.taskId === body.task_id), 'the callback');
    expect(verifyCallback(callback.raw, callback.headers, secrets, { toleranceSeconds: 300 }).taskId).toBe(
      body.task_id,
    );
    expect(callback.body).toMatchObject({ status: 'canceled', error: { code: 'deadline_exceeded' } });
  });

  it('leaves a task that finished before its deadline as it is: completed, charged once', async () => {
    const { ws, secret } = await caller();
    const res = await create(secret, { model: FAST, deadline_seconds: 3 }, { Prefer: 'wait=20' });
    const body = await jsonOf(res);
    expect({ status: res.status, task: body.status }).toEqual({ status: 200, task: 'completed' });
    const job = await eventually(
      async () => {
        const j = await runner.queues.get('tasks').getJob(jobIdFor(TaskDeadline, [body.task_id]));
        return j?.finishedOn ? j : null;
      },
      'the deadline job to run',
      10_000,
    );
    expect(job.returnvalue).toEqual({ outcome: 'skipped', reason: 'ended' });
    expect(await getTask(secret, body.task_id)).toMatchObject({ status: 'completed', error: null });
    expect(await money(ws.id)).toEqual({ balance: BALANCE - PRICE, charges: [PRICE], held: 0 });
  });

  it.each([
    [{ deadline_seconds: 0 }, {}, 'deadline_seconds'],
    [{ deadline_seconds: 86_401 }, {}, 'deadline_seconds'],
    [{ deadline_seconds: 1.5 }, {}, 'deadline_seconds'],
    [{ deadline_seconds: '10' }, {}, 'deadline_seconds'],
    [{}, { 'Cancel-After': 'soon' }, 'Cancel-After'],
    [{}, { 'Cancel-After': '0s' }, 'Cancel-After'],
    [{}, { 'Cancel-After': '25h' }, 'Cancel-After'],
    [{}, { 'Cancel-After': '5m1h' }, 'Cancel-After'],
    [{ deadline_seconds: 10 }, { 'Cancel-After': '10s' }, 'Cancel-After'],
  ])('refuses %j %j with a 400 naming %s, holding nothing', async (extra, headers, param) => {
    const { ws, secret } = await caller();
    const res = await create(secret, { model: FAST, ...extra }, headers);
    const body = await jsonOf(res);
    expect({ status: res.status, code: body.error.code, param: body.error.param }).toEqual({
      status: 400,
      code: 'invalid_request',
      param,
    });
    expect(await ctx.db.task.count({ where: { workspaceId: ws.id } })).toBe(0);
    expect(await money(ws.id)).toEqual({ balance: BALANCE, charges: [], held: 0 });
  });
});
