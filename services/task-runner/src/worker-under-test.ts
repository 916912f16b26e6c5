// Test support: the real task worker in the test process, on the test file's Postgres and Redis, and the channels
// and models that point generation at an upstream-sim.
import { modelRepository, type Db, type ModelKind } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { closeWorkers, createQueues, createRedisConnection, type Queues } from '@gensvc/queue';
import { addSimChannel, type TestContext } from '@gensvc/testing';
import { Catalog, CircuitBreaker, UpstreamClient, type BreakerOptions } from '@gensvc/upstream';
import type { Worker } from 'bullmq';
import type { TaskRunnerDeps } from './deps';
import type { TaskHandlerDeps } from './handlers/task-steps';
import type { TaskChannelKind } from './providers/providers';
import { handlerDepsOf, startTaskWorker } from './task-worker';

export interface TaskWorkerUnderTest {
  worker: Worker;
  deps: TaskRunnerDeps;
  /** What the worker's handlers get, for tests that run a handler themselves. */
  handlerDeps: TaskHandlerDeps;
  queues: Queues;
  close(): Promise<void>;
}

export async function startWorker(ctx: TestContext, opts: { breaker?: BreakerOptions; concurrency?: number } = {}): Promise<TaskWorkerUnderTest> {
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
    catalog: new Catalog(ctx.db, { ttlMs: 0 }),
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

export interface SimTaskChannel {
  /** Also the sim's channel prefix (`${simUrl}/ch/<name>`). */
  name: string;
  kind: TaskChannelKind;
  priority?: number;
  timeoutMs?: number;
  /** The model at the provider: owner/name for both protocols. */
  upstreamModel: string;
}

/** A generation model served by sim channels of kind replicate or fal; the channels' ids in the order given. */
export async function addSimTaskModel(db: Db, simUrl: string, spec: { id: string; kind: Extract<ModelKind, 'image' | 'video'>; unitPrice: bigint; channels: SimTaskChannel[] }) {
  const routes: { channelId: string; upstreamModel: string }[] = [];
  for (const c of spec.channels) {
    const channel = await addSimChannel(db, simUrl, { name: c.name, kind: c.kind, priority: c.priority, timeoutMs: c.timeoutMs });
    routes.push({ channelId: channel.id, upstreamModel: c.upstreamModel });
  }
  const model = await modelRepository.create(db, { id: spec.id, kind: spec.kind, unitPrice: spec.unitPrice, routes });
  return { model, channelIds: routes.map((r) => r.channelId) };
}
