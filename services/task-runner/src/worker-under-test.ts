// Test support: the real task worker in the test process, on the test file's Postgres and Redis. Models and channels
// that point generation at an upstream-sim: addSimModel of @gensvc/testing.
import { createLogger } from '@gensvc/observability';
import { closeWorkers, createQueues, createRedisConnection, type Queues } from '@gensvc/queue';
import type { TestContext } from '@gensvc/testing';
import { Catalog, CircuitBreaker, UpstreamClient, type BreakerOptions } from '@gensvc/upstream';
import type { Worker } from 'bullmq';
import type { TaskRunnerDeps } from './deps';
import type { TaskHandlerDeps } from './handlers/task-steps';
import { handlerDepsOf, startTaskWorker } from './task-worker';

export interface TaskWorkerUnderTest {
  worker: Worker;
  deps: TaskRunnerDeps;
  /** What the worker's handlers get, for tests that run a handler themselves. */
  handlerDeps: TaskHandlerDeps;
  queues: Queues;
  close(): Promise<void>;
}

export async function startWorker(
  ctx: TestContext,
  opts: { breaker?: BreakerOptions; concurrency?: number } = {},
): Promise<TaskWorkerUnderTest> {
  const redis = createRedisConnection(ctx.config.redisUrl, { name: 'task-runner-test' });
  const logger = createLogger({ service: 'task-runner-test', level: 'silent' });
  const queues = createQueues({ connection: redis, prefix: ctx.config.queuePrefix, logger });
  const upstream = new UpstreamClient();
  const deps: TaskRunnerDeps = {
    config: ctx.config,
    db: ctx.db,
    queues,
    redis,
    // No caching: tests change models and channels between tasks.
    catalog: new Catalog(ctx.db, ctx.secrets, { ttlMs: 0 }),
    upstream,
    breaker: new CircuitBreaker(opts.breaker),
    logger,
  };
  const worker = startTaskWorker(deps, opts.concurrency ?? 20);
  await worker.waitUntilReady();
  return {
    worker,
    deps,
    handlerDeps: handlerDepsOf(deps),
    queues,
    async close() {
      await closeWorkers([worker], 5_000);
      await upstream.close();
      await queues.close();
      redis.disconnect();
    },
  };
}
