import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';
import type { Db } from '@gensvc/db';
import type { Logger, Metrics } from '@gensvc/observability';
import type { RequestOptions } from '@gensvc/outbound';
import type { Queues } from '@gensvc/queue';
import type { Catalog, CircuitBreaker } from '@gensvc/upstream';
import type { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { KeyCache } from './auth/key-cache';

/** Everything the edge's routes use, made in main.ts (or by a test) and passed in: no module-level singletons. */
export interface EdgeDeps {
  config: Config;
  db: Db;
  redis: Redis;
  s3: S3Client;
  keyCache: KeyCache;
  logger: Logger;
  metrics: Metrics;
  /** Models, routes and channels, cached for a few seconds. */
  catalog: Catalog;
  /** Health of the channels this process calls itself (chat and vendor routes). */
  breaker: CircuitBreaker;
  queues: Queues;
  /** Completion events of the evaluate queue, to wait on a job's result. */
  evaluateEvents: QueueEvents;
  /**
   * Outbound client settings beyond config.outbound for caller-given URLs (image_url): none in production (Node
   * trusts NODE_EXTRA_CA_CERTS itself); tests pass their test CA.
   */
  outbound?: Pick<RequestOptions, 'ca' | 'lookup'>;
}
