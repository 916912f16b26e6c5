// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and https are
// loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'callback-dispatcher';
const config = loadConfigOrExit(SERVICE);
// This process sends the mail: without a server it would take mail jobs it cannot send.
const smtpUrl = config.mail.smtpUrl ?? '';
if (!smtpUrl) {
  process.stderr.write(`${SERVICE}: Invalid configuration:\n  - SMTP_URL is required (this service sends the mail)\n`);
  process.exit(1);
}
const telemetry = startTelemetry({
  serviceName: `gensvc-${SERVICE}`,
  otlpEndpoint: config.otel.endpoint,
  sampleRatio: config.otel.sampleRatio,
});

async function main() {
  const { createRedisConnection, createQueues, closeWorkersPhase, watchQueues, watchWorker } = await import(
    '@gensvc/queue'
  );
  const { closeDb, createDb, pingDb, SecretBox } = await import('@gensvc/db');
  const { createLogger, createMetrics, startOpsServer } = await import('@gensvc/observability');
  const { countDeliveries } = await import('./dispatch-metrics');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { startDispatcherWorker } = await import('./dispatcher-worker');
  const { startMailWorker } = await import('./mail-worker');
  const { createMailer } = await import('@gensvc/mail');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const concurrency = config.concurrency.callbackDispatcher;
  // An attempt holds a connection only between its queries, never across the receiver's answer.
  const db = createDb(config.databaseUrl, {
    max: Math.min(concurrency, 20),
    log: logger,
    service: SERVICE,
    pooler: config.databasePooler,
  });
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const queues = createQueues({ connection: redis, prefix: config.queuePrefix, logger });

  const worker = startDispatcherWorker(
    { config, db, queues, logger, secrets: new SecretBox(config.encryptionKeys) },
    { connection: redis, prefix: config.queuePrefix, logger },
    concurrency,
  );
  const mailer = createMailer({ smtpUrl, from: config.mail.from });
  const mailWorker = startMailWorker(
    { config, db, mailer, logger },
    { connection: redis, prefix: config.queuePrefix, logger },
  );
  // Pending deliveries whose chain of attempt jobs vanished (Redis flushed, a dispatcher killed between two steps).
  const { startDeliveryReconciler } = await import('./reconciler');
  const reconciler = startDeliveryReconciler({ config, db, queues, redis, logger });
  await Promise.all([worker.waitUntilReady(), mailWorker.waitUntilReady()]);
  // The ops port: probes and Prometheus, never the public network.
  const metrics = createMetrics(SERVICE);
  const watched = watchWorker({ worker, queue: queues.get('callbacks'), connection: redis, metrics });
  const watchedMail = watchWorker({ worker: mailWorker, queue: queues.get('mail'), connection: redis, metrics });
  watchQueues(metrics, [queues.get('callbacks'), queues.get('mail')]);
  countDeliveries(worker, metrics, db);
  const ops = await startOpsServer({
    port: config.opsPort,
    metrics,
    checks: {
      postgres: () => pingDb(db),
      redis: () => redis.ping(),
      worker: () => watched.check(),
      mail: () => watchedMail.check(),
    },
  });
  logger.info(
    {
      concurrency,
      retryScheduleMs: config.callbacks.retryScheduleMs,
      timeoutMs: config.callbacks.timeoutMs,
      allowCidrs: config.outbound.allowCidrs,
      opsPort: ops.port,
    },
    'callback dispatcher started',
  );

  const shutdown = createShutdown(
    [
      // An attempt lasts at most the callback timeout; past the wait it is aborted and goes back to the queue
      // unrecorded, to be made again under the same delivery id.
      { name: 'stop reconciler', timeoutMs: 10_000, run: () => reconciler.stop() },
      closeWorkersPhase([worker, mailWorker], {
        waitMs: config.callbacks.timeoutMs + 2_000,
        abortGraceMs: 3_000,
        what: 'callback attempts',
        logger,
      }),
      {
        name: 'close clients',
        timeoutMs: 5_000,
        run: async () => {
          await ops.close();
          mailer.close();
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
