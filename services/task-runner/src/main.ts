// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and undici are
// loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'task-runner';
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({
  serviceName: `gensvc-${SERVICE}`,
  otlpEndpoint: config.otel.endpoint,
  sampleRatio: config.otel.sampleRatio,
});

async function main() {
  const {
    createRedisConnection,
    createSubscriberConnection,
    createQueues,
    closeWorkersPhase,
    SharedSubscriber,
    watchQueues,
    watchWorker,
  } = await import('@gensvc/queue');
  const { closeDb, createDb, pingDb, SecretBox } = await import('@gensvc/db');
  const { createLogger, createMetrics, startOpsServer } = await import('@gensvc/observability');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { Catalog, CircuitBreaker, UpstreamClient, instrumentUpstream, shareUpstreamState } = await import(
    '@gensvc/upstream'
  );
  const { startTaskWorker } = await import('./task-worker');
  const { startReconciler } = await import('./reconciler');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  // A job holds a connection only for its few short transactions: more slots than connections is fine.
  const db = createDb(config.databaseUrl, {
    max: Math.min(config.concurrency.taskRunner, 20),
    log: logger,
    service: SERVICE,
    pooler: config.databasePooler,
  });
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const queues = createQueues({ connection: redis, prefix: config.queuePrefix, logger });
  const upstream = new UpstreamClient();
  const catalog = new Catalog(db, new SecretBox(config.encryptionKeys));
  const breaker = new CircuitBreaker();
  // Admin changes to models and channels, and circuits opened by other replicas, reach this one at once.
  const subscriber = new SharedSubscriber(
    createSubscriberConnection(config.redisUrl, { name: `${SERVICE}:subscriber` }),
    logger,
  );
  const upstreamState = await shareUpstreamState({
    redis,
    subscriber,
    queuePrefix: config.queuePrefix,
    catalog,
    breaker,
    log: logger,
  });
  const metrics = createMetrics(SERVICE);
  instrumentUpstream(breaker, metrics);
  const deps = { config, db, queues, redis, catalog, upstream, breaker, logger, metrics };

  const worker = startTaskWorker(deps);
  await worker.waitUntilReady();
  const reconciler = startReconciler(deps);
  // The ops port: probes and Prometheus, never the public network.
  const watched = watchWorker({ worker, queue: queues.get('tasks'), connection: redis, metrics });
  watchQueues(metrics, [queues.get('tasks')]);
  const ops = await startOpsServer({
    port: config.opsPort,
    metrics,
    checks: { postgres: () => pingDb(db), redis: () => redis.ping(), worker: () => watched.check() },
  });
  logger.info(
    {
      concurrency: config.concurrency.taskRunner,
      pollScheduleMs: config.tasks.pollScheduleMs,
      deadlineMs: config.tasks.deadlineMs,
      opsPort: ops.port,
    },
    'task runner ready',
  );

  const shutdown = createShutdown(
    [
      { name: 'stop reconciler', timeoutMs: 10_000, run: () => reconciler.stop() },
      // A job is one provider call and a few short transactions; past the wait it is aborted and handed back to the
      // queue unspent (its handler re-reads the row, so the re-run is harmless).
      closeWorkersPhase([worker], { waitMs: 15_000, abortGraceMs: 5_000, what: 'task jobs', logger }),
      {
        name: 'close clients',
        timeoutMs: 5_000,
        run: async () => {
          await ops.close();
          await upstream.close();
          await upstreamState.close();
          subscriber.close();
          await queues.close();
          redis.disconnect();
          await closeDb(db);
        },
      },
      { name: 'flush telemetry', timeoutMs: 5_000, run: () => telemetry.shutdown() },
    ],
    logger,
  );
  exitOnSignals(shutdown);
}

main().catch((err) => {
  process.stderr.write(
    `${SERVICE}: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
