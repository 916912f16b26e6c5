// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before express, ioredis and pg
// are loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'edge';
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({ serviceName: `gensvc-${SERVICE}`, otlpEndpoint: config.otel.endpoint });

async function main() {
  const { createServer } = await import('node:http');
  const { createRedisConnection } = await import('@gensvc/queue');
  const { createDb } = await import('@gensvc/db');
  const { createS3, checkBucket } = await import('@gensvc/storage');
  const { createLogger, createMetrics } = await import('@gensvc/observability');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { buildApp } = await import('./app');
  const { createEdgeDeps } = await import('./deps');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const db = createDb(config.databaseUrl);
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const s3 = createS3(config.s3);
  await checkBucket(s3, config.s3.bucket);
  const edge = await createEdgeDeps({ config, db, redis, s3, logger, metrics: createMetrics(SERVICE) });
  const app = buildApp(edge.deps);
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  logger.info({ port: config.port, publicBaseUrl: config.publicBaseUrl }, 'edge listening');

  const shutdown = createShutdown(
    [
      {
        name: 'stop taking HTTP',
        timeoutMs: 10_000,
        run: () => new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
      },
      { name: 'finish settlements', timeoutMs: 10_000, run: () => app.closeRoutes() },
      { name: 'close clients', timeoutMs: 5_000, run: async () => {
        await edge.close();
        redis.disconnect();
        s3.destroy();
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
