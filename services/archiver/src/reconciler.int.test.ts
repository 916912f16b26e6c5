// The archiver's reconciler against real Postgres and Redis: a task whose result is recorded gets an archive job for
// each output still pending, and one whose archives are all done but which was never completed is completed, its
// callback scheduled; what the task-runner owns (queued and polling tasks) is left alone.
import { ArchiveOutput, CallbackDeliver, TaskSubmit } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { createQueues, jobIdFor, type Queues } from '@gensvc/queue';
import { letTasksGoStale, makeTask, useTestContext } from '@gensvc/testing';
import { startArchiveReconciler } from './reconciler';

// A stale threshold (max(interval, 3 × slowest poll)) of 30 s: only tasks the test lets go stale are stale, however
// slowly a loaded machine runs it (sweeps are run by the test, never by the timer).
const ctx = useTestContext({ RECONCILE_INTERVAL: '30s', TASK_POLL_SCHEDULE: '50ms' });
let queues: Queues;
let reconciler: ReturnType<typeof startArchiveReconciler>;

beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  reconciler = startArchiveReconciler(
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

/** Past the stale threshold (30 s here). */
const letGoStale = (...ids: string[]) => letTasksGoStale(ctx.db, ids);

it('completes a task whose archives finished but whose completion was lost; schedules its callback', async () => {
  const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_2', upstreamUrls: null });
  await taskRepository.recordOutput(
    ctx.db,
    task.id,
    { outputs: [{ kind: 'image', url: 'https://provider.example/a.png', archive_status: 'failed' }] },
    task.reserved,
  );
  await letGoStale(task.id);
  expect(await reconciler.runOnce()).toMatchObject({ completed: 1 });
  expect(await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).toMatchObject({
    status: 'completed',
    callbackState: 'pending',
  });
  expect(await (await queues.get('callbacks').getJob(jobIdFor(CallbackDeliver, [task.id, 1])))?.getState()).toBe(
    'waiting',
  );
});

it('re-adds the pending archive of a finished provider job, once', async () => {
  const task = await makeTask(ctx.db);
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'pred_3', upstreamUrls: null });
  await taskRepository.recordOutput(
    ctx.db,
    task.id,
    { outputs: [{ kind: 'video', url: 'https://provider.example/v.mp4', archive_status: 'pending' }] },
    task.reserved,
  );
  await letGoStale(task.id);
  expect(await reconciler.runOnce()).toMatchObject({ readded: 1, completed: 0 });
  expect(await queues.get('archive').getJob(jobIdFor(ArchiveOutput, [task.id, 0]))).toBeDefined();
  await letGoStale(task.id);
  expect(await reconciler.runOnce()).toMatchObject({ readded: 0 });
  expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'running' });
});

it('leaves queued and polling tasks to the task-runner', async () => {
  const queued = await makeTask(ctx.db);
  const polling = await makeTask(ctx.db);
  await taskRepository.markSubmitted(ctx.db, polling.id, {
    channelId: 'ch_x',
    upstreamId: 'pred_5',
    upstreamUrls: null,
  });
  await letGoStale(queued.id, polling.id);
  // The earlier test's running task may still be examined (its archive job exists): nothing may be added or completed.
  expect(await reconciler.runOnce()).toMatchObject({ readded: 0, completed: 0 });
  expect(await queues.get('tasks').getJob(jobIdFor(TaskSubmit, [queued.id]))).toBeUndefined();
  expect(await taskRepository.find(ctx.db, queued.id)).toMatchObject({ status: 'queued' });
  expect(await taskRepository.find(ctx.db, polling.id)).toMatchObject({ status: 'running' });
});
