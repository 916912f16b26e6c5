import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';
import {
  groupCommit,
  SecretBox,
  taskRepository,
  type Db,
  type WebhookOutputInput,
  type WebhookOutputRecord,
} from '@gensvc/db';
import type { Logger, Metrics } from '@gensvc/observability';
import { OutboundAgents, type RequestOptions } from '@gensvc/outbound';
import { createQueues, createSubscriberConnection, SharedSubscriber, type Queues } from '@gensvc/queue';
import { Catalog, CircuitBreaker, shareUpstreamState, type CatalogOptions } from '@gensvc/upstream';
import type { RedisConnection } from '@gensvc/queue';
import { KeyCache, subscribeInvalidations } from './auth/key-cache';
import { BudgetLeases, connectLeaseReturns, type LeaseOptions } from './billing/budget-leases';
import { Holds } from './billing/holds';
import { SlotLeases } from './limits/rate-limit';
import { EvaluateReplies } from './routes/evaluate/replies';
import { VerifiedTlsCache } from './routes/tasks/callback-url';
import { TaskWaits } from './routes/tasks/task-waits';

/** Everything the edge's routes use, made by createEdgeDeps (or a test) and passed in: no module-level singletons. */
export interface EdgeDeps {
  config: Config;
  db: Db;
  /** Seals and opens secrets at rest (callback signing secrets; the catalog opens channels' credentials). */
  secrets: SecretBox;
  redis: RedisConnection;
  s3: S3Client;
  keyCache: KeyCache;
  logger: Logger;
  metrics: Metrics;
  /** Models, routes and channels, cached for a few seconds. */
  catalog: Catalog;
  /** Health of the channels this process calls itself (chat and vendor routes). */
  breaker: CircuitBreaker;
  queues: Queues;
  /** The evaluate workers' replies to this process (one subscription per process). */
  evaluateReplies: EvaluateReplies;
  /** Callers waiting for their task (`Prefer: wait`), told of its end by the task-finished notices. */
  taskWaits: TaskWaits;
  /** Every paid route's money: held before the work, then settled or released (billing/holds.ts). */
  holds: Holds;
  /** This replica's rate-limit slots, leased in blocks for workspaces with large limits. */
  rateSlots: SlotLeases;
  /**
   * Outbound client settings beyond config.outbound for caller-given URLs (image_url): in production only the
   * process's kept-alive connections (made here; Node trusts NODE_EXTRA_CA_CERTS itself); tests pass their test CA.
   */
  outbound?: Pick<RequestOptions, 'ca' | 'lookup' | 'agents'>;
  /** Callback URLs' verified TLS handshakes, reused for a minute (routes/tasks/callback-url.ts). */
  callbackTls: VerifiedTlsCache;
  /**
   * Records a provider webhook's result (taskRepository.recordWebhookOutputs), in a group with the webhooks that arrive
   * while the previous group is in flight (one statement, one commit).
   */
  recordWebhookOutput: (input: WebhookOutputInput) => Promise<WebhookOutputRecord>;
}

/** The clients the caller makes (and closes, after close() below): from config in main.ts, or from a test's context. */
export type EdgeClients = Pick<EdgeDeps, 'config' | 'db' | 'redis' | 's3' | 'logger' | 'metrics'>;

export interface EdgeDepsOptions {
  /** Tests read the catalog afresh on every request (ttlMs 0), so that models they change show at once. */
  catalog?: CatalogOptions;
  leases?: LeaseOptions;
}

/**
 * The rest of the deps over the caller's clients: the key cache with its invalidation subscription, the queues, the
 * evaluate workers' replies, the catalog and the breaker. close() closes what was made here, once HTTP has stopped
 * and the routes have finished (EdgeApp.closeRoutes), before the caller closes its clients.
 */
export async function createEdgeDeps(
  clients: EdgeClients,
  options: EdgeDepsOptions = {},
): Promise<{ deps: EdgeDeps; close(): Promise<void> }> {
  const { config, db, redis, logger } = clients;
  const keyCache = new KeyCache({ ttlMs: config.keyCacheTtlMs });
  // One subscriber connection for every channel this process listens on.
  const subscriber = new SharedSubscriber(
    createSubscriberConnection(config.redisUrl, { name: 'edge:subscriber' }),
    logger,
  );
  const unsubscribe = await subscribeInvalidations(subscriber, keyCache, config.queuePrefix);
  const queues = createQueues({ connection: redis, prefix: config.queuePrefix, logger });
  const evaluateReplies = await EvaluateReplies.connect(subscriber, config.queuePrefix, logger);
  const taskWaits = await TaskWaits.connect(subscriber, config.queuePrefix, config.tasks.maxWaiters);
  // Admin changes to models and channels, and circuits opened by other replicas, reach this one at once.
  const secrets = new SecretBox(config.encryptionKeys);
  const catalog = new Catalog(db, secrets, options.catalog);
  const breaker = new CircuitBreaker();
  const upstreamState = await shareUpstreamState({
    redis,
    subscriber,
    queuePrefix: config.queuePrefix,
    catalog,
    breaker,
    log: logger,
  });
  let leases: BudgetLeases | undefined;
  const leaseReturns = await connectLeaseReturns(redis, subscriber, config.queuePrefix, () => leases, logger);
  leases = new BudgetLeases(db, logger, leaseReturns.ask, options.leases);
  const holds = new Holds(db, leases, logger);
  const rateSlots = new SlotLeases(redis);
  const agents = new OutboundAgents();
  return {
    deps: {
      ...clients,
      secrets,
      keyCache,
      catalog,
      breaker,
      queues,
      evaluateReplies,
      taskWaits,
      holds,
      rateSlots,
      outbound: { agents },
      callbackTls: new VerifiedTlsCache(),
      recordWebhookOutput: webhookResults(db),
    },
    close: async () => {
      // After the routes have finished (EdgeApp.closeRoutes): every charge written, every lease given back.
      await holds.close();
      rateSlots.close();
      await leaseReturns.close();
      await upstreamState.close();
      await unsubscribe();
      await evaluateReplies.close();
      await taskWaits.close();
      subscriber.close();
      await queues.close();
      await agents.close();
    },
  };
}

/**
 * Provider webhooks' results are written in groups: each settles its task's hold on the key's row and the
 * workspace's, so written one at a time they would queue on those rows. A group is one transaction that locks
 * every row it writes first, in the order every writer takes them (migration 20261126210000); a failed group is
 * retried item by item (groupCommit).
 */
function webhookResults(db: Db): (input: WebhookOutputInput) => Promise<WebhookOutputRecord> {
  return groupCommit((inputs: WebhookOutputInput[]) => taskRepository.recordWebhookOutputs(db, inputs), { max: 100 });
}
