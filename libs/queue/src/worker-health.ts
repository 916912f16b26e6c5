// What a worker service's ops port says about its queues (libs/observability startOpsServer): each worker's
// readiness (running, its connection answers, and not stalled) and its job durations, and each queue's depth.
import { scrapedGauge, type Metrics } from '@gensvc/observability';
import type { Job, Queue, Worker } from 'bullmq';
import type { RedisConnection } from './connection';

/** No job started or finished here for this long while jobs wait and slots are free: the worker is stuck. */
export const DEFAULT_STALL_MS = 60_000;

export interface WatchedWorker {
  /** A readiness check: rejects, saying why, when the worker is not running, cannot reach Redis, or is stalled. */
  check(): Promise<void>;
}

/**
 * Watches a worker: times its jobs into `gensvc_job_duration_seconds` and tracks its activity. `queue` is the
 * same queue as seen by a producer, to count what waits. A worker whose slots are all busy (long jobs) is not
 * stalled; one with free slots that takes nothing while jobs wait is.
 */
export function watchWorker(opts: {
  worker: Worker;
  queue: Queue;
  /** The Redis connection the worker runs its commands on. */
  connection: RedisConnection;
  metrics: Metrics;
  stallMs?: number;
  now?: () => number;
}): WatchedWorker {
  const { worker, queue, connection, metrics } = opts;
  const now = opts.now ?? Date.now;
  const stallMs = opts.stallMs ?? DEFAULT_STALL_MS;
  let lastActivity = now();
  let active = 0;
  const ended = (outcome: 'completed' | 'failed') => (job: Job | undefined) => {
    lastActivity = now();
    active = Math.max(0, active - 1);
    if (job?.processedOn && job.finishedOn) {
      metrics.jobDuration.observe(
        { queue: worker.name, job: job.name, outcome },
        (job.finishedOn - job.processedOn) / 1000,
      );
    }
  };
  worker.on('active', () => {
    lastActivity = now();
    active += 1;
  });
  worker.on('completed', ended('completed'));
  worker.on('failed', ended('failed'));
  worker.on('drained', () => (lastActivity = now()));
  return {
    async check() {
      if (!worker.isRunning()) throw new Error(`worker ${worker.name} is not running`);
      if (worker.isPaused()) throw new Error(`worker ${worker.name} is paused`);
      await connection.ping();
      const idleMs = now() - lastActivity;
      if (idleMs < stallMs || active >= worker.concurrency) return;
      const waiting = await queue.getWaitingCount();
      if (waiting > 0)
        throw new Error(
          `worker ${worker.name} stalled: ${waiting} job(s) waiting, ` +
            `none started here for ${Math.round(idleMs / 1000)} s`,
        );
    },
  };
}

const STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized', 'waiting-children'] as const;

/** `gensvc_queue_jobs{queue,state}`: the queues' job counts, read from Redis at each scrape (BullMQ's getJobCounts). */
export function watchQueues(metrics: Metrics, queues: readonly Queue[]) {
  scrapedGauge(
    metrics,
    {
      name: 'gensvc_queue_jobs',
      help: `Jobs in each queue by state (${STATES.join(', ')}), read at scrape time.`,
      labelNames: ['queue', 'state'] as const,
    },
    async () => {
      const counts = await Promise.all(queues.map(async (q) => [q.name, await q.getJobCounts(...STATES)] as const));
      return counts.flatMap(([queue, c]) =>
        STATES.map((state) => ({ labels: { queue, state }, value: c[state] ?? 0 })),
      );
    },
  );
}
