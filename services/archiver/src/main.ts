// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and the AWS
// SDK are loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'archiver';
const RESCHEDULE_EVERY_MS = 5 * 60_000;
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({
  serviceName: `gensvc-${SERVICE}`,
  otlpEndpoint: config.otel.endpoint,
  sampleRatio: config.otel.sampleRatio,
});

async function main() {
  const { createRedisConnection, createQueues, closeWorkersPhase, watchQueues, watchWorker } = await import(
    '@gensvc/queue'
  );
  const { closeDb, createDb, pingDb } = await import('@gensvc/db');
  const { createS3, checkBucket } = await import('@gensvc/storage');
  const { createLogger, createMetrics, startOpsServer } = await import('@gensvc/observability');
  const { countArchiveResults } = await import('./archive-metrics');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { startArchiveWorker } = await import('./archive-worker');
  const { startMaintenanceWorker } = await import('./maintenance-worker');
  const { scheduleMaintenance } = await import('./maintenance-schedule');
  const { startArchiveReconciler } = await import('./reconciler');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const db = createDb(config.databaseUrl, { log: logger, service: SERVICE, pooler: config.databasePooler });
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const s3 = createS3(config.s3);
  await checkBucket(s3, config.s3.bucket);
  const queues = createQueues({ connection: redis, prefix: config.queuePrefix, logger });

  const deps = { config, db, s3, logger, queues };
  const conn = { connection: redis, prefix: config.queuePrefix, logger };
  const workers = [startArchiveWorker(deps, conn), startMaintenanceWorker(deps, conn)];
  // The ops port: probes and Prometheus, never the public network.
  const metrics = createMetrics(SERVICE);
  const [archiveQueue, maintenanceQueue] = [queues.get('archive'), queues.get('maintenance')];
  const watched = [
    watchWorker({ worker: workers[0]!, queue: archiveQueue, connection: redis, metrics }),
    watchWorker({ worker: workers[1]!, queue: maintenanceQueue, connection: redis, metrics }),
  ];
  watchQueues(metrics, [archiveQueue, maintenanceQueue]);
  countArchiveResults(workers[0]!, workers[1]!, metrics);
  const ops = await startOpsServer({
    port: config.opsPort,
    metrics,
    checks: {
      postgres: () => pingDb(db),
      redis: () => redis.ping(),
      s3: (signal) => checkBucket(s3, config.s3.bucket, signal),
      archive_worker: () => watched[0]!.check(),
      maintenance_worker: () => watched[1]!.check(),
    },
  });
  await scheduleMaintenance(queues);
  // Schedules live in Redis: re-registered every few minutes, so a Redis that lost them (flushed, restarted
  // without persistence) gets them back without an archiver restart. Upserting an unchanged schedule is a no-op.
  const reschedule = setInterval(() => {
    scheduleMaintenance(queues).catch((err: unknown) =>
      logger.error({ err }, 'could not re-register the maintenance schedules'),
    );
  }, RESCHEDULE_EVERY_MS);
  reschedule.unref();
  // Archives whose job vanished (Redis flushed, a job failed for good) and completions left undone.
  const reconciler = startArchiveReconciler({ config, db, queues, redis, logger });
  logger.info(
    { concurrency: config.concurrency.archiver, allowCidrs: config.outbound.allowCidrs, opsPort: ops.port },
    'archiver started',
  );

  const shutdown = createShutdown(
    [
      { name: 'stop rescheduling', timeoutMs: 1_000, run: async () => clearInterval(reschedule) },
      { name: 'stop reconciler', timeoutMs: 10_000, run: () => reconciler.stop() },
      // In-flight archives get 25 s to finish; past that they are aborted and go back to the queue unspent.
      closeWorkersPhase(workers, { waitMs: 25_000, abortGraceMs: 5_000, what: 'archive jobs', logger }),
      {
        name: 'close clients',
        timeoutMs: 5_000,
        run: async () => {
          await ops.close();
          await queues.close();
          redis.disconnect();
          s3.destroy();
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
