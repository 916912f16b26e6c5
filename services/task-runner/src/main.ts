// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and undici are
// loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'task-runner';
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({ serviceName: `gensvc-${SERVICE}`, otlpEndpoint: config.otel.endpoint });

async function main() {
  const { createRedisConnection, createQueues, closeWorkersPhase } = await import('@gensvc/queue');
  const { createDb } = await import('@gensvc/db');
  const { createLogger } = await import('@gensvc/observability');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { Catalog, CircuitBreaker, UpstreamClient } = await import('@gensvc/upstream');
  const { startTaskWorker } = await import('./task-worker');
  const { startReconciler } = await import('./reconciler');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  // A job holds a connection only for its few short transactions: more slots than connections is fine.
  const db = createDb(config.databaseUrl, { max: Math.min(config.concurrency.taskRunner, 20) });
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const queues = createQueues({ connection: redis, prefix: config.queuePrefix, logger });
  const upstream = new UpstreamClient();
  const deps = { config, db, queues, redis, catalog: new Catalog(db), upstream, breaker: new CircuitBreaker(), logger };

  const worker = startTaskWorker(deps);
  await worker.waitUntilReady();
  const reconciler = startReconciler(deps);
  logger.info({ concurrency: config.concurrency.taskRunner, pollScheduleMs: config.tasks.pollScheduleMs, deadlineMs: config.tasks.deadlineMs }, 'task runner ready');

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
          await upstream.close();
          await queues.close();
          redis.disconnect();
          await db.$disconnect();
        },
      },
      { name: 'flush telemetry', timeoutMs: 5_000, run: () => telemetry.shutdown() },
    ],
    logger,
  );
  exitOnSignals(shutdown);
}

main().catch((err) => {
  process.stderr.write(`${SERVICE}: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
