// The reconciler against real Postgres and Redis: rows whose next job is missing get it back, exactly once, and
// rows whose job is alive are left alone.
import { CallbackDeliver, TaskPoll, TaskSubmit } from '@gensvc/contracts';
import { callbackRepository, taskRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { createQueues, enqueue, jobIdFor, type Queues } from '@gensvc/queue';
import { eventually, makeTask, useTestContext } from '@gensvc/testing';
import { Worker } from 'bullmq';
import { startReconciler, type Reconciler } from './reconciler';

const ctx = useTestContext({ RECONCILE_INTERVAL: '200ms', TASK_POLL_SCHEDULE: '50ms', CALLBACK_RETRY_SCHEDULE: '0,30s,2m,10m,1h' });
let queues: Queues;
let reconciler: Reconciler;

beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  reconciler = startReconciler({ config: ctx.config, db: ctx.db, queues, redis: ctx.redis, logger: createLogger({ service: 'reconciler-test', level: 'silent' }) }, { autorun: false });
});
afterAll(async () => {
  await reconciler.stop();
  await queues.close();
});

/**
 * Puts tasks past the stale threshold (max(interval, 3 × slowest poll) = 200 ms here) by moving their updatedAt back,
 * the only column the reconciler judges staleness by.
 */
const letGoStale = async (...ids: string[]) => {
  await ctx.db.task.updateMany({ where: { id: { in: ids } }, data: { updatedAt: new Date(Date.now() - 1_000) } });
};

const job = (name: string, id: string) => queues.get(name === 'callback.deliver' ? 'callbacks' : 'tasks').getJob(id);
const stateOf = async (name: string, id: string) => (await job(name, id))?.getState();

it('re-adds the submit of a queued task whose job vanished, once, and then leaves it alone', async () => {
  const task = await makeTask(ctx.db);
  await letGoStale(task.id);
  const first = await reconciler.runOnce();
  expect(first.readded).toBeGreaterThanOrEqual(1);
  expect(await stateOf('task.submit', jobIdFor(TaskSubmit, [task.id]))).toBe('waiting');

  // Touched: not stale on the next sweep; stale again later, its job exists, so nothing is added.
  expect((await reconciler.runOnce()).readded).toBe(0);
  await letGoStale(task.id);
  const again = await reconciler.runOnce();
  expect(again.tasks).toBeGreaterThanOrEqual(1);
  expect(again.readded).toBe(0);
  expect(await queues.get('tasks').getJobCountByTypes('waiting')).toBe(1);
});

it('resumes polling of a running task at its recorded poll count, and replaces a failed job of that id', async () => {
  const task = await makeTask(ctx.db);
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_1', upstreamUrls: null });
  await taskRepository.advancePoll(ctx.db, task.id, 1);
  await taskRepository.advancePoll(ctx.db, task.id, 2);
  // Job 3 ran and failed for good (say Postgres was down through its retries) while the task still waits on it:
  // taken by a worker of our own and failed on its last attempt.
  await queues.get('tasks').drain();
  await enqueue(queues, TaskPoll, { taskId: task.id, attempt: 3 }, { attempts: 1 });
  const taker = new Worker('tasks', null, { connection: ctx.redis, prefix: ctx.config.queuePrefix, autorun: false });
  const taken = await taker.getNextJob('token-1');
  expect(taken?.id).toBe(jobIdFor(TaskPoll, [task.id, 3]));
  await taken!.moveToFailed(new Error('gave up'), 'token-1', false);
  await taker.close();
  expect(await stateOf('task.poll', jobIdFor(TaskPoll, [task.id, 3]))).toBe('failed');
  await letGoStale(task.id);
  await reconciler.runOnce();
  const id = jobIdFor(TaskPoll, [task.id, 3]);
  const state = await stateOf('task.poll', id);
  expect(['waiting', 'delayed']).toContain(state);
  expect((await job('task.poll', id))?.data).toMatchObject({ taskId: task.id, attempt: 3 });
});

it('completes a task whose archives all finished but whose completion was lost, and schedules its callback', async () => {
  const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_2', upstreamUrls: null });
  await taskRepository.recordOutput(ctx.db, task.id, { outputs: [{ kind: 'image', url: 'https://provider.example/a.png', archive_status: 'failed' }] }, task.reserved);
  await letGoStale(task.id);
  await reconciler.runOnce();
  expect(await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).toMatchObject({ status: 'completed', callbackState: 'pending' });
  expect(await stateOf('callback.deliver', jobIdFor(CallbackDeliver, [task.id, 1]))).toBe('waiting');
});

it('re-adds the pending archive of a finished provider job', async () => {
  const task = await makeTask(ctx.db);
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_3', upstreamUrls: null });
  await taskRepository.recordOutput(ctx.db, task.id, { outputs: [{ kind: 'video', url: 'https://provider.example/v.mp4', archive_status: 'pending' }] }, task.reserved);
  await letGoStale(task.id);
  await reconciler.runOnce();
  expect(await queues.get('archive').getJob(`archive.output/${task.id}/0`)).toBeDefined();
});

describe('callbacks', () => {
  async function finished(opts: { attempts?: { status: number | null; agoMs: number }[] } = {}) {
    const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
    for (const [i, a] of (opts.attempts ?? []).entries()) {
      await callbackRepository.recordAttempt(ctx.db, {
        workspaceId: task.workspaceId,
        taskId: task.id,
        attempt: i + 1,
        deliveryId: `dlv_${task.id}_${i + 1}`,
        url: 'https://hooks.example/cb',
        statusCode: a.status,
        durationMs: 5,
        error: a.status === null ? 'timeout' : null,
        responseHead: null,
        at: new Date(Date.now() - a.agoMs),
      });
    }
    await letGoStale(task.id);
    return task;
  }

  it('sends the first attempt of a pending delivery that never got its job', async () => {
    const task = await finished();
    await reconciler.runOnce();
    expect(await stateOf('callback.deliver', jobIdFor(CallbackDeliver, [task.id, 1]))).toBe('waiting');
  });

  it('schedules the next attempt after a recorded failure, at its time in the schedule', async () => {
    // Attempt 2 started 10 s ago and ended 5 ms later (its duration): attempt 3 is due 2 min after it ended, so in at
    // most 110 005 ms, less the time the sweep took to start.
    const task = await finished({ attempts: [{ status: 500, agoMs: 40_000 }, { status: null, agoMs: 10_000 }] });
    await reconciler.runOnce();
    const next = await job('callback.deliver', jobIdFor(CallbackDeliver, [task.id, 3]));
    expect(await next?.getState()).toBe('delayed');
    expect(next!.opts.delay).toBeGreaterThan(105_000);
    expect(next!.opts.delay).toBeLessThanOrEqual(110_005);
  });

  it('marks delivered when the last attempt succeeded but was not recorded as delivered, and parks after five failures', async () => {
    const delivered = await finished({ attempts: [{ status: 500, agoMs: 50_000 }, { status: 204, agoMs: 1_000 }] });
    const parked = await finished({ attempts: Array.from({ length: 5 }, (_, i) => ({ status: 503, agoMs: 10_000 - i })) });
    await reconciler.runOnce();
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: delivered.id } })).toMatchObject({ callbackState: 'delivered' });
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: parked.id } })).toMatchObject({ callbackState: 'parked' });
    expect(await job('callback.deliver', jobIdFor(CallbackDeliver, [parked.id, 6]))).toBeUndefined();
  });
});

it('one replica sweeps per interval: the timer path skips a round whose lock another holds, and sweeps once it is free', async () => {
  const key = `${ctx.config.queuePrefix}:task-runner:reconciler`;
  await ctx.redis.set(key, 'another replica', 'PX', 10_000);
  const task = await makeTask(ctx.db);
  await letGoStale(task.id);
  // runOnce bypasses the lock (tests); the timer path takes it: with the lock held elsewhere nothing runs.
  const timed = startReconciler({ config: ctx.config, db: ctx.db, queues, redis: ctx.redis, logger: createLogger({ service: 'timed', level: 'silent' }) });
  try {
    // Two intervals and a half: an absence can only be waited for.
    await new Promise((r) => setTimeout(r, 500));
    expect(await job('task.submit', jobIdFor(TaskSubmit, [task.id]))).toBeUndefined();
    // The control: the same timer path sweeps, and re-adds the submit, once the lock is free.
    await ctx.redis.del(key);
    expect(await eventually(() => stateOf('task.submit', jobIdFor(TaskSubmit, [task.id])), 'the timer sweep to re-add the submit')).toBe('waiting');
  } finally {
    await timed.stop();
    await ctx.redis.del(key);
  }
});
