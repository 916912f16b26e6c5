import type { Config } from '@gensvc/config';
import type { Db } from '@gensvc/db';
import type { Logger, Metrics } from '@gensvc/observability';
import type { Queues } from '@gensvc/queue';
import type { Catalog, CircuitBreaker, UpstreamClient } from '@gensvc/upstream';
import type { RedisConnection } from '@gensvc/queue';

/**
 * Everything the task runner uses, made in main.ts (or by a test) and passed in. The worker's handlers and the
 * reconciler (ReconcilerDeps is a subset) share it.
 */
export interface TaskRunnerDeps {
  config: Config;
  db: Db;
  /** Where the handlers add the jobs that follow a transition (polls, archives, callbacks, cancels). */
  queues: Queues;
  /** Shared command connection (the reconciler's sweep lock); its owner closes it. */
  redis: RedisConnection;
  catalog: Catalog;
  /** The process's keep-alive client to the providers. */
  upstream: UpstreamClient;
  /** Per process: every job shares what it learns about the channels. */
  breaker: CircuitBreaker;
  logger: Logger;
  /** The process's metrics (spend at recorded results); tests may leave it out. */
  metrics?: Metrics;
}
