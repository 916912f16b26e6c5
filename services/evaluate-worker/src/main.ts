// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and http are
// loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'evaluate-worker';
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
    SharedSubscriber,
    watchQueues,
    watchWorker,
  } = await import('@gensvc/queue');
  const { closeDb, createDb, pingDb, SecretBox } = await import('@gensvc/db');
  const { createLogger, createMetrics, startOpsServer } = await import('@gensvc/observability');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { Catalog, instrumentUpstream, shareUpstreamState } = await import('@gensvc/upstream');
  const { startEvaluateWorker } = await import('./evaluate-worker');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  // Only the catalog reads Postgres (cached, refreshed on change): the edge charges the answers.
  const db = createDb(config.databaseUrl, { max: 4, log: logger, service: SERVICE, pooler: config.databasePooler });
  const connection = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const catalog = new Catalog(db, new SecretBox(config.encryptionKeys));
  const metrics = createMetrics(SERVICE);
  const evaluate = startEvaluateWorker({
    connection,
    prefix: config.queuePrefix,
    concurrency: config.concurrency.evaluate,
    logger,
    catalog,
  });
  instrumentUpstream(evaluate.breaker, metrics);
  // Admin changes to models and channels, and circuits opened by other replicas, reach this one at once.
  const subscriber = new SharedSubscriber(
    createSubscriberConnection(config.redisUrl, { name: `${SERVICE}:subscriber` }),
    logger,
  );
  const upstreamState = await shareUpstreamState({
    redis: connection,
    subscriber,
    queuePrefix: config.queuePrefix,
    catalog,
    breaker: evaluate.breaker,
    log: logger,
  });
  await evaluate.worker.waitUntilReady();
  // The ops port: probes and Prometheus, never the public network.
  const queues = createQueues({ connection, prefix: config.queuePrefix, logger });
  const watched = watchWorker({ worker: evaluate.worker, queue: queues.get('evaluate'), connection, metrics });
  watchQueues(metrics, [queues.get('evaluate')]);
  const ops = await startOpsServer({
    port: config.opsPort,
    metrics,
    checks: { postgres: () => pingDb(db), redis: () => connection.ping(), worker: () => watched.check() },
  });
  logger.info(
    { concurrency: config.concurrency.evaluate, queuePrefix: config.queuePrefix, opsPort: ops.port },
    'evaluate worker ready',
  );

  const shutdown = createShutdown(
    [
      // Jobs end by their deadline (the edge waits 60 s at most); past the timeout they go back to the queue.
      { name: 'close worker', timeoutMs: 20_000, run: () => evaluate.close(15_000) },
      {
        name: 'close clients',
        timeoutMs: 5_000,
        run: async () => {
          await ops.close();
          await upstreamState.close();
          subscriber.close();
          await queues.close();
          connection.disconnect();
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
