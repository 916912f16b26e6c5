// The task-runner's reconciler against real Postgres and Redis: queued and polling tasks whose next job is missing
// get it back, exactly once; rows whose job is alive, and steps the archiver and the dispatcher own, are left alone.
import { ArchiveOutput, CallbackDeliver, TaskCancel, TaskPoll, TaskSubmit } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { bullPrefix, createQueues, enqueue, jobIdFor, type Queues } from '@gensvc/queue';
import { eventually, letTasksGoStale, makeTask, useTestContext } from '@gensvc/testing';
import { Worker } from 'bullmq';
import { startReconciler, type Reconciler } from './reconciler';

const ctx = useTestContext({ RECONCILE_INTERVAL: '200ms', TASK_POLL_SCHEDULE: '50ms' });
let queues: Queues;
let reconciler: Reconciler;

beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  reconciler = startReconciler(
    {
      config: ctx.config,
      db: ctx.db,
      queues,
      redis: ctx.redis,
      logger: createLogger({ service: 'reconciler-test', level: 'silent' }),
    },
    { autorun: false },
  );
});
afterAll(async () => {
  await reconciler.stop();
  await queues.close();
});

/** Past the stale threshold (max(interval, 3 × slowest poll) = 200 ms here). */
const letGoStale = (...ids: string[]) => letTasksGoStale(ctx.db, ids);

/**
 * Each test's tasks end with it: a sweep counts every stale live task, and one left by an earlier test (whose job a
 * later test's drain removed) goes stale by itself on a slow machine and would be counted in the next test's report.
 */
const made: string[] = [];
const makeLiveTask = async (opts?: Parameters<typeof makeTask>[1]) => {
  const task = await makeTask(ctx.db, opts);
  made.push(task.id);
  return task;
};
afterEach(async () => {
  for (const id of made.splice(0)) await taskRepository.finish(ctx.db, id, { status: 'canceled' });
});

const job = (_name: string, id: string) => queues.get('tasks').getJob(id);
const stateOf = async (name: string, id: string) => (await job(name, id))?.getState();

it('re-adds the submit of a queued task whose job vanished, once, and then leaves it alone', async () => {
  const task = await makeLiveTask();
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
  const task = await makeLiveTask();
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_1', upstreamUrls: null });
  await taskRepository.advancePoll(ctx.db, task.id, 1);
  await taskRepository.advancePoll(ctx.db, task.id, 2);
  // Job 3 ran and failed for good (say Postgres was down through its retries) while the task still waits on it:
  // taken by a worker of our own and failed on its last attempt.
  await queues.get('tasks').drain();
  await enqueue(queues, TaskPoll, { taskId: task.id, attempt: 3 }, { attempts: 1 });
  const prefix = bullPrefix(ctx.redis, ctx.config.queuePrefix);
  const taker = new Worker('tasks', null, { connection: ctx.redis, prefix, autorun: false });
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

it(
  "is the webhooks' fallback: an unpolled running task is polled after TASK_POLL_WEBHOOK_FALLBACK, or past its " +
    'deadline',
  async () => {
    const webhooks = { ...ctx.config.providerWebhooks, baseUrl: 'https://hooks.gensvc.test', fallbackPollMs: 60_000 };
    const hooked = startReconciler(
      {
        config: { ...ctx.config, providerWebhooks: webhooks },
        db: ctx.db,
        queues,
        redis: ctx.redis,
        logger: createLogger({ service: 'hooked', level: 'silent' }),
      },
      { autorun: false },
    );
    const pollOne = (id: string) => stateOf('task.poll', jobIdFor(TaskPoll, [id, 1]));
    try {
      // Submitted with a webhook (no poll made), unmoved for 30 s: stale for a polled task (200 ms here), not yet for
      // one that waits for its webhook.
      const waiting = await makeLiveTask();
      await taskRepository.markSubmitted(ctx.db, waiting.id, {
        channelId: 'ch_x',
        upstreamId: 'pred_hook_1',
        upstreamUrls: null,
      });
      await letTasksGoStale(ctx.db, [waiting.id], 30_000);
      // Moved a moment ago, but past its deadline: its poll times it out.
      const overdue = await makeLiveTask();
      await taskRepository.markSubmitted(ctx.db, overdue.id, {
        channelId: 'ch_x',
        upstreamId: 'pred_hook_2',
        upstreamUrls: null,
      });
      await ctx.db.task.update({ where: { id: overdue.id }, data: { deadlineAt: new Date(Date.now() - 1_000) } });

      await hooked.runOnce();
      expect(await pollOne(waiting.id)).toBeUndefined();
      expect(await pollOne(overdue.id)).toBe('waiting');

      // Its webhook lost: once it has waited the fallback, it is polled, due now.
      await letTasksGoStale(ctx.db, [waiting.id], 61_000);
      await hooked.runOnce();
      expect(await pollOne(waiting.id)).toBe('waiting');
      expect((await job('task.poll', jobIdFor(TaskPoll, [waiting.id, 1])))?.data).toMatchObject({
        taskId: waiting.id,
        attempt: 1,
      });
    } finally {
      await hooked.stop();
    }
  },
);

it('leaves what other services own alone: a task whose result is recorded, and a pending delivery', async () => {
  const archiving = await makeLiveTask({ callbackUrl: 'https://hooks.example/cb' });
  await taskRepository.markSubmitted(ctx.db, archiving.id, {
    channelId: 'ch_x',
    upstreamId: 'pred_4',
    upstreamUrls: null,
  });
  await taskRepository.recordOutput(
    ctx.db,
    archiving.id,
    { outputs: [{ kind: 'image', url: 'https://provider.example/a.png', archive_status: 'pending' }] },
    archiving.reserved,
  );
  const delivering = await makeLiveTask({ callbackUrl: 'https://hooks.example/cb' });
  await taskRepository.finish(ctx.db, delivering.id, { status: 'canceled' });
  await letGoStale(archiving.id, delivering.id);
  const report = await reconciler.runOnce();
  expect(report.readded).toBe(0);
  expect(await queues.get('archive').getJob(jobIdFor(ArchiveOutput, [archiving.id, 0]))).toBeUndefined();
  expect(await queues.get('callbacks').getJob(jobIdFor(CallbackDeliver, [delivering.id, 1]))).toBeUndefined();
  expect(await taskRepository.find(ctx.db, archiving.id)).toMatchObject({ status: 'running' });
});

it('one replica sweeps per interval: a round whose lock another holds is skipped, then swept when free', async () => {
  const key = `${ctx.config.queuePrefix}:sweep:task-runner`;
  await ctx.redis.set(key, 'another replica', 'PX', 10_000);
  const task = await makeLiveTask();
  await letGoStale(task.id);
  // runOnce bypasses the lock (tests); the timer path takes it: with the lock held elsewhere nothing runs.
  const timed = startReconciler({
    config: ctx.config,
    db: ctx.db,
    queues,
    redis: ctx.redis,
    logger: createLogger({ service: 'timed', level: 'silent' }),
  });
  try {
    // Two intervals and a half: an absence can only be waited for.
    await new Promise((r) => setTimeout(r, 500));
    expect(await job('task.submit', jobIdFor(TaskSubmit, [task.id]))).toBeUndefined();
    // The control: the same timer path sweeps, and re-adds the submit, once the lock is free.
    await ctx.redis.del(key);
    expect(
      await eventually(
        () => stateOf('task.submit', jobIdFor(TaskSubmit, [task.id])),
        'the timer sweep to re-add the submit',
      ),
    ).toBe('waiting');
  } finally {
    await timed.stop();
    await ctx.redis.del(key);
  }
});

it("cancels a live task past its caller's deadline whose deadline job was lost, once, releasing its hold", async () => {
  const overdue = await makeLiveTask({ cancelAfter: new Date(Date.now() - 1_000) });
  await taskRepository.markSubmitted(ctx.db, overdue.id, {
    channelId: 'ch_x',
    upstreamId: 'pred_late',
    upstreamUrls: null,
  });
  const notYet = await makeLiveTask({ cancelAfter: new Date(Date.now() + 60_000) });
  // Held at creation: the balance less the task's price (makeTask's 40_000).
  const held = await ctx.db.workspace.findUniqueOrThrow({ where: { id: overdue.workspaceId } });

  expect((await reconciler.runOnce()).overdue).toBe(1);
  const ended = await taskRepository.find(ctx.db, overdue.id);
  expect(ended).toMatchObject({ status: 'canceled', errorCode: 'deadline_exceeded', cost: null });
  expect((await ctx.db.reservation.findUniqueOrThrow({ where: { id: ended!.reservationId! } })).state).toBe('released');
  const after = await ctx.db.workspace.findUniqueOrThrow({ where: { id: overdue.workspaceId } });
  expect(after.balance).toBe(held.balance + 40_000n);
  // The provider's job is canceled; the task not yet due is left alone, and a second sweep finds nothing.
  expect(await stateOf('task.cancel', jobIdFor(TaskCancel, [overdue.id]))).toBe('waiting');
  expect((await taskRepository.find(ctx.db, notYet.id))?.status).toBe('queued');
  expect((await reconciler.runOnce()).overdue).toBe(0);
});
