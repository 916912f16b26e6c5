// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before ioredis, pg and http are
// loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'evaluate-worker';
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({ serviceName: `gensvc-${SERVICE}`, otlpEndpoint: config.otel.endpoint });

async function main() {
  const { createRedisConnection } = await import('@gensvc/queue');
  const { createDb } = await import('@gensvc/db');
  const { createLogger } = await import('@gensvc/observability');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { startEvaluateWorker } = await import('./evaluate-worker');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  // One connection per job slot at most: every job reads the catalog (cached) and settles or releases once.
  const db = createDb(config.databaseUrl, { max: Math.min(config.concurrency.evaluate, 20) });
  const connection = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const evaluate = startEvaluateWorker({ db, connection, prefix: config.queuePrefix, concurrency: config.concurrency.evaluate, logger });
  await evaluate.worker.waitUntilReady();
  logger.info({ concurrency: config.concurrency.evaluate, queuePrefix: config.queuePrefix }, 'evaluate worker ready');

  const shutdown = createShutdown(
    [
      // Jobs end by their deadline (the edge waits 60 s at most); past the timeout they go back to the queue.
      { name: 'close worker', timeoutMs: 20_000, run: () => evaluate.close(15_000) },
      { name: 'close clients', timeoutMs: 5_000, run: async () => {
        connection.disconnect();
        await db.$disconnect();
      } },
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
