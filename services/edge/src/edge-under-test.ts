// Test support: the real app from buildApp, listening on a real socket, with real Postgres, Redis and S3 from the
// test file's context.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, createMetrics } from '@gensvc/observability';
import type { TestContext } from '@gensvc/testing';
import { createQueueEvents, createQueues, createRedisConnection } from '@gensvc/queue';
import { Catalog, CircuitBreaker } from '@gensvc/upstream';
import { buildApp } from './app';
import { KeyCache, subscribeInvalidations } from './auth/key-cache';
import type { EdgeDeps } from './deps';

export interface EdgeUnderTest {
  url: string;
  deps: EdgeDeps;
  close(): Promise<void>;
}

export async function startEdge(ctx: TestContext, overrides: Partial<EdgeDeps> = {}): Promise<EdgeUnderTest> {
  const logger = createLogger({ service: 'edge-test', level: 'silent' });
  const keyCache = new KeyCache({ ttlMs: ctx.config.keyCacheTtlMs });
  const subscriber = createRedisConnection(ctx.config.redisUrl, { name: 'edge-test:key-invalidation' });
  const unsubscribe = await subscribeInvalidations(subscriber, keyCache, ctx.config.queuePrefix, logger);
  const queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix, logger });
  const evaluateEvents = createQueueEvents({ queue: 'evaluate', connection: ctx.redis, prefix: ctx.config.queuePrefix, logger });
  await evaluateEvents.waitUntilReady();
  const deps: EdgeDeps = {
    config: ctx.config,
    db: ctx.db,
    redis: ctx.redis,
    s3: ctx.s3,
    keyCache,
    logger,
    metrics: createMetrics('edge-test'),
    catalog: new Catalog(ctx.db, { ttlMs: 0 }),
    breaker: new CircuitBreaker(),
    queues,
    evaluateEvents,
    ...overrides,
  };
  const app = buildApp(deps);
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deps,
    close: async () => {
      await unsubscribe();
      await evaluateEvents.close();
      await queues.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.closeRoutes();
    },
  };
}
