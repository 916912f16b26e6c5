// Free retries against the upstream-sim on both protocols, with real Postgres and Redis: a provider job that fails
// retryably (a failed prediction or a fal 5xx result, a job the provider lost) gets a new job, on another channel when
// the model has one, the task is charged once for a success and nothing for a failure, and the attempts are listed.
import { taskEnvelope } from '@gensvc/contracts';
import { callbackRepository, newId, taskRepository, type TaskRow } from '@gensvc/db';
import { scheduleSubmit, taskJobRef, type Queues } from '@gensvc/queue';
import { createLogger } from '@gensvc/observability';
import {
  addSimModel,
  createQueuedTask,
  eventually,
  letTasksGoStale,
  makeKey,
  makeWorkspace,
  useTestContext,
} from '@gensvc/testing';
import { startSim, type Sim } from '../../upstream-sim/src/index';
import { taskPoll } from './handlers/task-poll';
import { taskSubmit } from './handlers/task-submit';
import type { TaskChannelKind } from './providers/providers';
import { startReconciler } from './reconciler';
import { startWorker, type TaskWorkerUnderTest } from './worker-under-test';

const ctx = useTestContext({ TASK_POLL_SCHEDULE: '50ms,50ms,100ms', TASK_MAX_RESUBMITS: '2' });
let sim: Sim;
let runner: TaskWorkerUnderTest;
let queues: Queues;

beforeAll(async () => {
  sim = await startSim({ taskDurationMs: 200 });
  runner = await startWorker(ctx);
  queues = runner.queues;
});
afterAll(async () => {
  await runner?.close();
  await sim?.close();
});
afterEach(() => sim.faults.clear());

const PRICE = 40_000n;
const BALANCE = 10_000_000n;
let serial = 0;

async function setup(protocol: TaskChannelKind, count = 1) {
  const n = ++serial;
  const names = Array.from({ length: count }, (_, i) => `rs-${protocol}-${n}-${String.fromCharCode(97 + i)}`);
  const { model, channelIds } = await addSimModel(ctx.db, sim.url, {
    id: `sim/image-rs-${protocol}-${n}`,
    kind: 'image',
    unitPrice: PRICE,
    channels: names.map((name, i) => ({ name, kind: protocol, priority: count - i, upstreamModel: 'sim/image-1' })),
  });
  return { model: model.id, channels: names, channelIds };
}

async function createTask(model: string, opts: { submit?: boolean } = {}) {
  const ws = await makeWorkspace(ctx.db, { balance: BALANCE });
  const { key } = await makeKey(ctx.db, ws.id);
  const now = new Date();
  const task = await createQueuedTask(
    ctx.db,
    {
      id: newId('tsk'),
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: `req_${newId('res')}`,
      model,
      operation: 'text-to-image',
      input: { prompt: 'a lighthouse at dusk', width: 512, height: 512 } as never,
      callbackUrl: 'https://receiver.example/hook',
      amount: PRICE,
      deadlineAt: new Date(now.getTime() + 30_000),
    },
    now,
  );
  if (opts.submit !== false) await scheduleSubmit(queues, taskJobRef(task));
  return { task, ws };
}

const settled = (id: string, timeoutMs = 15_000) =>
  eventually(
    async () => {
      const t = await taskRepository.find(ctx.db, id);
      return t && (t.output !== null || ['failed', 'canceled', 'completed'].includes(t.status)) ? t : null;
    },
    `task ${id} to settle`,
    timeoutMs,
  );

async function money(workspaceId: string, reservationId: string) {
  const [ws, charges, reservation] = await Promise.all([
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
    ctx.db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' } }),
    ctx.db.reservation.findUniqueOrThrow({ where: { id: reservationId } }),
  ]);
  return { balance: ws.balance, charges: charges.length, reservation: reservation.state };
}

const envelopeOf = (t: TaskRow) => taskEnvelope(t, { currency: 'USD' });
const createsTo = (channel: string) =>
  sim.requests().filter((r) => r.channel === channel && r.method === 'POST' && !r.path.endsWith('/cancel'));

describe.each<TaskChannelKind>(['replicate', 'fal'])('%s', (protocol) => {
  it('resubmits a job that failed with the provider error and completes, charged once', async () => {
    const s = await setup(protocol);
    sim.faults.add({ channel: s.channels[0], job: { outcome: 'fail', error: 'CUDA out of memory' }, times: 1 });
    const { task, ws } = await createTask(s.model);
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'running', cost: PRICE, channelId: s.channelIds[0] });
    expect(await money(ws.id, task.reservationId!)).toEqual({
      balance: BALANCE - PRICE,
      charges: 1,
      reservation: 'settled',
    });
    const { attempts } = envelopeOf(done);
    expect(attempts.map((a) => [a.channel, a.status, a.error_code])).toEqual([
      [s.channelIds[0], 'failed', 'upstream_error'],
      [s.channelIds[0], 'succeeded', null],
    ]);
    expect(attempts[0]!.upstream_id).not.toBe(attempts[1]!.upstream_id);
    expect(createsTo(s.channels[0]!)).toHaveLength(2);

    // A late success of the failed job (its webhook) names a job the task no longer holds; a late poll of that job is
    // stale. Neither records or charges anything.
    const late = { outputs: [{ kind: 'image', url: 'https://provider.example/late.png', archive_status: 'pending' }] };
    const [record] = await taskRepository.recordWebhookOutputs(ctx.db, [
      { id: task.id, upstreamId: attempts[0]!.upstream_id, provider: protocol, outputs: { image: late as never } },
    ]);
    expect(record).toEqual({ outcome: 'not_this' });
    const job = { id: 'late', attemptsMade: 0, opts: { attempts: 5 }, timestamp: Date.now() } as never;
    const stale = await taskPoll(runner.handlerDeps)({ taskId: task.id, workspaceId: ws.id, attempt: 1 } as never, {
      job,
    });
    expect(stale).toMatchObject({ outcome: 'stale' });
    expect(await money(ws.id, task.reservationId!)).toMatchObject({ balance: BALANCE - PRICE, charges: 1 });
  });

  it('resubmits to the other channel when the model has two', async () => {
    const s = await setup(protocol, 2);
    sim.faults.add({ channel: s.channels[0], job: { outcome: 'fail' }, times: 1 });
    const { task, ws } = await createTask(s.model);
    const done = await settled(task.id);
    expect(done).toMatchObject({ cost: PRICE, channelId: s.channelIds[1] });
    expect(envelopeOf(done).attempts.map((a) => [a.channel, a.status])).toEqual([
      [s.channelIds[0], 'failed'],
      [s.channelIds[1], 'succeeded'],
    ]);
    expect((await money(ws.id, task.reservationId!)).charges).toBe(1);
  });

  it('resubmits a job the provider lost (404 for its id)', async () => {
    const s = await setup(protocol);
    sim.faults.add({ channel: s.channels[0], job: { outcome: 'lost' }, times: 1 });
    const { task, ws } = await createTask(s.model);
    const done = await settled(task.id);
    expect(done.cost).toBe(PRICE);
    expect(envelopeOf(done).attempts.map((a) => a.status)).toEqual(['lost', 'succeeded']);
    expect(await money(ws.id, task.reservationId!)).toMatchObject({ balance: BALANCE - PRICE, charges: 1 });
  });

  it('fails after TASK_MAX_RESUBMITS + 1 failed jobs, the hold released and every attempt listed', async () => {
    const s = await setup(protocol, 2);
    for (const channel of s.channels) sim.faults.add({ channel, job: { outcome: 'fail', error: 'worker crashed' } });
    const { task, ws } = await createTask(s.model);
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'upstream_error', cost: null });
    expect(await money(ws.id, task.reservationId!)).toEqual({ balance: BALANCE, charges: 0, reservation: 'released' });
    const envelope = envelopeOf(done);
    expect(envelope.status).toBe('failed');
    expect(envelope.attempts.map((a) => [a.channel, a.status])).toEqual([
      [s.channelIds[0], 'failed'],
      [s.channelIds[1], 'failed'],
      [s.channelIds[0], 'failed'],
    ]);
    expect(envelope.attempts.every((a) => a.ended_at !== null && a.error_code === 'upstream_error')).toBe(true);
    expect(done.callbackState).toBe('pending');
    // The callback's body is rendered from what the dispatcher reads for an attempt: failed, with the attempts.
    const [context] = await callbackRepository.attemptContexts(ctx.db, ctx.secrets, [
      { taskId: task.id, now: new Date() },
    ]);
    const body = taskEnvelope(context!.task, { currency: 'USD', deliveredAt: new Date() });
    expect(body.status).toBe('failed');
    expect(body.attempts).toEqual(envelope.attempts);
  });

  it('fails at once, with no resubmit, on a content refusal and on a 4xx at submission', async () => {
    const s = await setup(protocol, 2);
    sim.faults.add({ channel: s.channels[0], job: { outcome: 'nsfw' }, times: 1 });
    const refused = await createTask(s.model);
    const done = await settled(refused.task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'content_rejected' });
    expect(envelopeOf(done).attempts).toHaveLength(1);

    sim.faults.add({ channel: s.channels[0], operation: 'create', status: 422, times: 1 });
    const invalid = await createTask(s.model);
    expect(await settled(invalid.task.id)).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(createsTo(s.channels[1]!)).toEqual([]);
    expect(await money(invalid.ws.id, invalid.task.reservationId!)).toMatchObject({ balance: BALANCE, charges: 0 });
  });
});

describe('a worker that dies between a failed job and its resubmit', () => {
  it.each<TaskChannelKind>(['replicate', 'fal'])(
    '%s: still ends in one completion and one charge',
    async (protocol) => {
      const s = await setup(protocol);
      sim.faults.add({ channel: s.channels[0], job: { outcome: 'fail' }, times: 1 });
      const { task, ws } = await createTask(s.model, { submit: false });
      // Submitted by hand with the first poll an hour away, so only this test polls the first job.
      const handlerDeps = runner.handlerDeps;
      const slow = { ...handlerDeps, config: { ...handlerDeps.config, tasks: { ...handlerDeps.config.tasks } } };
      slow.config.tasks.pollScheduleMs = [3_600_000];
      const job = { id: 'direct', attemptsMade: 0, opts: { attempts: 5 }, timestamp: Date.now() } as never;
      expect(await taskSubmit(slow)({ taskId: task.id } as never, { job })).toMatchObject({ outcome: 'submitted' });
      // The poll that finds the job failed commits the resubmit, then its process dies before adding the submit job
      // (the queue's look-up of that job throws): the same as a SIGKILL between the two.
      const real = slow.queues;
      const dying = {
        ...slow,
        queues: {
          ...real,
          get: (name: 'tasks') =>
            new Proxy(real.get(name), {
              get(target, prop) {
                if (prop === 'getJob') return () => Promise.reject(new Error('killed'));
                const value = Reflect.get(target, prop);
                return typeof value === 'function' ? value.bind(target) : value;
              },
            }),
        } as never,
      };
      let attempt = 1;
      await eventually(async () => {
        attempt = (await taskRepository.find(ctx.db, task.id))!.attempts;
        const ran = await taskPoll(dying)({ taskId: task.id, workspaceId: ws.id, attempt } as never, { job }).then(
          (r) => r,
          (e: Error) => e.message,
        );
        return ran === 'killed' ? true : null;
      }, 'the poll to find the job failed');
      const poll = { taskId: task.id, workspaceId: ws.id, attempt } as never;
      const queued = await taskRepository.find(ctx.db, task.id);
      expect(queued).toMatchObject({ status: 'queued', upstreamId: null });
      // A second run of that poll (the job retried after the crash) finds the task moved on.
      expect(await taskPoll(slow)(poll, { job })).toEqual({ outcome: 'stale', reason: 'not_running' });

      // The reconciler finds the queued task unmoved and adds its submit again; the normal worker runs it.
      const reconciler = startReconciler(
        { ...runner.deps, logger: createLogger({ service: 'rs-reconciler', level: 'silent' }) },
        { autorun: false },
      );
      try {
        await letTasksGoStale(ctx.db, [task.id]);
        expect((await reconciler.runOnce()).readded).toBeGreaterThanOrEqual(1);
      } finally {
        await reconciler.stop();
      }
      const done = await settled(task.id);
      expect(done.cost).toBe(PRICE);
      expect(envelopeOf(done).attempts.map((a) => a.status)).toEqual(['failed', 'succeeded']);
      expect(await money(ws.id, task.reservationId!)).toEqual({
        balance: BALANCE - PRICE,
        charges: 1,
        reservation: 'settled',
      });
    },
  );
});
