// Test support: the real evaluate worker in the test process, on the test file's Postgres and Redis. Models and
// channels that point evaluate at an upstream-sim: addSimModel of @gensvc/testing.
import { createLogger } from '@gensvc/observability';
import { createRedisConnection } from '@gensvc/queue';
import type { TestContext } from '@gensvc/testing';
import { Catalog, type BreakerOptions } from '@gensvc/upstream';
import { startEvaluateWorker, type EvaluateWorker } from './evaluate-worker';

export async function startWorker(
  ctx: TestContext,
  opts: { breaker?: BreakerOptions; concurrency?: number } = {},
): Promise<EvaluateWorker> {
  const connection = createRedisConnection(ctx.config.redisUrl, { name: 'evaluate-worker-test' });
  const worker = startEvaluateWorker({
    connection,
    prefix: ctx.config.queuePrefix,
    concurrency: opts.concurrency ?? 20,
    logger: createLogger({ service: 'evaluate-worker-test', level: 'silent' }),
    // No caching: tests change models and channels between requests.
    catalog: new Catalog(ctx.db, ctx.secrets, { ttlMs: 0 }),
    ...(opts.breaker && { breaker: opts.breaker }),
  });
  await worker.worker.waitUntilReady();
  return {
    ...worker,
    async close(timeoutMs = 5_000) {
      await worker.close(timeoutMs);
      connection.disconnect();
    },
  };
}
