// The dispatcher's reconciler against real Postgres and Redis: a pending delivery that stopped moving gets the last
// recorded attempt's outcome decided and applied again (delivered, parked, or the next attempt at its time), or its
// round's first attempt when none was recorded.
import { CallbackDeliver } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { createQueues, jobIdFor, type Queues } from '@gensvc/queue';
import { letTasksGoStale, makeTask, useTestContext } from '@gensvc/testing';
import { startDeliveryReconciler } from './reconciler';

// A stale threshold of 30 s: only tasks the test lets go stale are stale, however slowly a loaded machine runs it.
const ctx = useTestContext({
  RECONCILE_INTERVAL: '30s',
  TASK_POLL_SCHEDULE: '50ms',
  CALLBACK_RETRY_SCHEDULE: '0,30s,2m,10m,1h',
});
let queues: Queues;
let reconciler: ReturnType<typeof startDeliveryReconciler>;

beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  reconciler = startDeliveryReconciler(
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
const job = (_name: string, id: string) => queues.get('callbacks').getJob(id);
const stateOf = async (name: string, id: string) => (await job(name, id))?.getState();

describe('callbacks', () => {
  async function finished(opts: { attempts?: { status: number | null; agoMs: number }[] } = {}) {
    const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
    for (const [i, a] of (opts.attempts ?? []).entries()) {
      await taskRepository.recordDeliveryAttempt(ctx.db, {
        input: {
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
        },
        decidedOn: { callbackRoundStart: 1 },
        step: null,
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
    const task = await finished({
      attempts: [
        { status: 500, agoMs: 40_000 },
        { status: null, agoMs: 10_000 },
      ],
    });
    await reconciler.runOnce();
    const next = await job('callback.deliver', jobIdFor(CallbackDeliver, [task.id, 3]));
    expect(await next?.getState()).toBe('delayed');
    expect(next!.opts.delay).toBeGreaterThan(105_000);
    expect(next!.opts.delay).toBeLessThanOrEqual(110_005);
  });

  it('marks delivered when the last attempt succeeded unrecorded; parks after five failures', async () => {
    const delivered = await finished({
      attempts: [
        { status: 500, agoMs: 50_000 },
        { status: 204, agoMs: 1_000 },
      ],
    });
    const parked = await finished({
      attempts: Array.from({ length: 5 }, (_, i) => ({ status: 503, agoMs: 10_000 - i })),
    });
    await reconciler.runOnce();
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: delivered.id } })).toMatchObject({
      callbackState: 'delivered',
    });
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: parked.id } })).toMatchObject({
      callbackState: 'parked',
    });
    expect(await job('callback.deliver', jobIdFor(CallbackDeliver, [parked.id, 6]))).toBeUndefined();
  });
});
