// Test support: the real app from buildApp, listening on a real socket, with real Postgres, Redis and S3 from the
// test file's context.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, createMetrics } from '@gensvc/observability';
import type { TestContext } from '@gensvc/testing';
import { buildApp, type AppOptions } from './app';
import { createEdgeDeps, type EdgeDeps } from './deps';
import { createEdgeServer } from './http/server';

export interface EdgeUnderTest {
  url: string;
  deps: EdgeDeps;
  close(): Promise<void>;
}

/** `overrides` replace deps after they are made (what they replace is still closed by close()). */
export async function startEdge(
  ctx: TestContext,
  overrides: Partial<EdgeDeps> = {},
  options: AppOptions = {},
): Promise<EdgeUnderTest> {
  const logger = createLogger({ service: 'edge-test', level: 'silent' });
  const made = await createEdgeDeps(
    { config: ctx.config, db: ctx.db, redis: ctx.redis, s3: ctx.s3, logger, metrics: createMetrics('edge-test') },
    { catalog: { ttlMs: 0 } },
  );
  // A test's outbound settings (its CA, a resolver) join the edge's own kept-alive connections rather than drop them.
  const deps: EdgeDeps = { ...made.deps, ...overrides, outbound: { ...made.deps.outbound, ...overrides.outbound } };
  const app = buildApp(deps, options);
  const server: Server = createEdgeServer(app, ctx.config.http);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deps,
    // The order of main.ts's shutdown: HTTP, then the routes' own work, then the deps.
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.closeRoutes();
      await made.close();
    },
  };
}
