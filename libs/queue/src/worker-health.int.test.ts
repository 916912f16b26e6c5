import { FilesRetentionSweep } from '@gensvc/contracts';
import { createMetrics, renderMetrics } from '@gensvc/observability';
import { eventually, useTestContext } from '@gensvc/testing';
import { createRedisConnection } from './connection';
import { createQueues, enqueue } from './queues';
import { closeWorkers, defineWorker } from './worker';
import { watchQueues, watchWorker } from './worker-health';

const ctx = useTestContext();

describe('watchWorker', () => {
  it('is ready while idle or busy, stalled when jobs wait and it takes none, and times its jobs', async () => {
    const connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'test:worker-health' });
    const prefix = ctx.env.QUEUE_PREFIX!;
    const queues = createQueues({ connection, prefix });
    // Jobs that wait where no worker takes them: the state a stuck worker leaves its queue in.
    const elsewhere = createQueues({ connection, prefix: `${prefix}-stuck` });
    let release: (() => void) | null = null;
    const worker = defineWorker({
      queue: 'maintenance',
      connection,
      prefix,
      concurrency: 1,
      handlers: {
        'files.retention-sweep': () => new Promise<void>((r) => (release = r)),
        'billing.release-expired': async () => {},
      },
    });
    const metrics = createMetrics('test');
    let now = Date.now();
    try {
      await worker.waitUntilReady();
      const own = watchWorker({
        worker,
        queue: queues.get('maintenance'),
        connection,
        metrics,
        stallMs: 60_000,
        now: () => now,
      });
      const stuck = watchWorker({
        worker,
        queue: elsewhere.get('maintenance'),
        connection,
        metrics: createMetrics('other'),
        stallMs: 60_000,
        now: () => now,
      });
      await expect(own.check()).resolves.toBeUndefined();
      await enqueue(elsewhere, FilesRetentionSweep, {});
      await expect(stuck.check()).resolves.toBeUndefined(); // waiting, but not idle long enough
      now += 61_000;
      await expect(stuck.check()).rejects.toThrow(/stalled: 1 job\(s\) waiting, none started here for 61 s/);
      await expect(own.check()).resolves.toBeUndefined(); // idle, and nothing waits on its own queue

      // Busy: every slot holds a long job, so jobs waiting behind it are no stall.
      await enqueue(queues, FilesRetentionSweep, {});
      await eventually(() => release !== null, 'the job to start');
      now += 61_000;
      await expect(stuck.check()).resolves.toBeUndefined();
      release!();
      const body = await eventually(async () => {
        const text = (await renderMetrics(metrics)).body;
        const sweepDone =
          /gensvc_job_duration_seconds_count\{[^}]*queue="maintenance"[^}]*job="files.retention-sweep"[^}]*/.source +
          /outcome="completed"[^}]*\} 1/.source;
        return new RegExp(sweepDone).test(text) ? text : null;
      }, 'the job timed');
      expect(body).toContain('gensvc_job_duration_seconds_bucket');

      watchQueues(metrics, [queues.get('maintenance'), elsewhere.get('maintenance')]);
      const text = (await renderMetrics(metrics)).body;
      expect(text).toMatch(/gensvc_queue_jobs\{[^}]*queue="maintenance"[^}]*state="waiting"[^}]*\} 1/);

      worker.pause(true);
      await expect(own.check()).rejects.toThrow(/paused/);
      await closeWorkers([worker], 1_000);
      await expect(own.check()).rejects.toThrow(/not running/);
    } finally {
      await closeWorkers([worker], 1_000);
      await queues.close();
      await elsewhere.get('maintenance').obliterate({ force: true });
      await elsewhere.close();
      connection.disconnect();
    }
  });
});
