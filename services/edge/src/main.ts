// Boot only: config → telemetry → deps → start → shutdown phases. Telemetry starts before express, ioredis and pg
// are loaded, so their instrumentation takes; everything else is required after it.
import { loadConfigOrExit } from '@gensvc/config';
import { startTelemetry } from '@gensvc/observability';

const SERVICE = 'edge';
const config = loadConfigOrExit(SERVICE);
const telemetry = startTelemetry({
  serviceName: `gensvc-${SERVICE}`,
  otlpEndpoint: config.otel.endpoint,
  sampleRatio: config.otel.sampleRatio,
});

async function main() {
  const { createEdgeServer } = await import('./http/server');
  const { createRedisConnection } = await import('@gensvc/queue');
  const { closeDb, createDb } = await import('@gensvc/db');
  const { createS3, checkBucket } = await import('@gensvc/storage');
  const { createLogger, createMetrics, startOpsServer } = await import('@gensvc/observability');
  const { instrumentUpstream } = await import('@gensvc/upstream');
  const { edgeReadinessChecks } = await import('./routes/health/readyz');
  const { createShutdown, exitOnSignals } = await import('@gensvc/lifecycle');
  const { buildApp } = await import('./app');
  const { createEdgeDeps } = await import('./deps');

  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const db = createDb(config.databaseUrl, { log: logger, service: SERVICE, pooler: config.databasePooler });
  const redis = createRedisConnection(config.redisUrl, { name: `${SERVICE}:commands` });
  const s3 = createS3(config.s3);
  await checkBucket(s3, config.s3.bucket);
  const metrics = createMetrics(SERVICE);
  const edge = await createEdgeDeps({ config, db, redis, s3, logger, metrics });
  instrumentUpstream(edge.deps.breaker, metrics);
  const app = buildApp(edge.deps);
  // The ops port (/healthz, /readyz, /metrics): probes and Prometheus, never the public network.
  const ops = await startOpsServer({ port: config.opsPort, metrics, checks: edgeReadinessChecks(edge.deps) });
  const server = createEdgeServer(app, config.http);
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  logger.info({ port: config.port, publicBaseUrl: config.publicBaseUrl, opsPort: ops.port }, 'edge listening');

  const shutdown = createShutdown(
    [
      {
        name: 'stop taking HTTP',
        timeoutMs: 10_000,
        run: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
            // Callers waiting for their task (Prefer: wait) are answered now, with the queued task.
            void edge.deps.taskWaits.close();
          }),
      },
      {
        name: 'close upstream connections, finish webhook promotions',
        timeoutMs: 10_000,
        run: () => app.closeRoutes(),
      },
      // Every answered call's charge written, the unused money of every lease given back.
      { name: 'write charges, give leases back', timeoutMs: 10_000, run: () => edge.deps.holds.close() },
      {
        name: 'close clients',
        timeoutMs: 5_000,
        run: async () => {
          await ops.close();
          await edge.close();
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
