import { UpstreamClient } from '@gensvc/upstream';
import express from 'express';
import { authenticate, requireScope } from './auth/authenticate';
import type { EdgeDeps } from './deps';
import { errorHandler, notFound } from './http/errors';
import { httpMetrics } from './http/metrics';
import { requestContext } from './http/request-context';
import { ChatProxy } from './proxy/chat-proxy';
import { chatRoutes } from './routes/chat';
import { healthz } from './routes/health/healthz';
import { readyz } from './routes/health/readyz';
import { evaluateRoutes } from './routes/evaluate';
import type { EvaluateOptions } from './routes/evaluate/evaluate';
import { fileRoutes } from './routes/files';
import { imageRoutes } from './routes/images';
import { getCallbackSecret, rotateCallbackSecret } from './routes/me/callback-secret';
import { getBalance } from './routes/me/get-balance';
import { metricsRoute } from './routes/metrics';
import { responseRoutes } from './routes/responses';
import { taskRoutes } from './routes/tasks';

export type EdgeApp = express.Express & {
  /** Finishes what routes still do after their answers (settlements) and closes upstream connections: after HTTP stops. */
  closeRoutes(): Promise<void>;
};

export interface AppOptions {
  /** How long POST /api/v1/evaluate waits for its answer; DEFAULT_EVALUATE_OPTIONS where not given (tests shorten it). */
  evaluate?: Partial<EvaluateOptions>;
}

/** The edge's Express app, without listening: main.ts listens, tests listen on port 0. */
export function buildApp(deps: EdgeDeps, options: AppOptions = {}): EdgeApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('case sensitive routing', true);

  app.use(requestContext(deps.logger));
  app.use(httpMetrics(deps.metrics));

  app.get('/healthz', healthz);
  app.get('/readyz', readyz(deps));
  app.get('/metrics', metricsRoute(deps.metrics));

  const bearer = authenticate(deps, 'bearer');
  app.get('/api/v1/me/balance', bearer, requireScope('account.read'), getBalance(deps));
  app.get('/api/v1/me/callback-secret', bearer, requireScope('tasks.write'), getCallbackSecret(deps));
  app.post('/api/v1/me/callback-secret/rotate', bearer, requireScope('tasks.write'), rotateCallbackSecret(deps));

  app.use(evaluateRoutes(deps, options.evaluate));
  app.use(fileRoutes(deps));
  // One upstream connection pool for every route that calls channels; one chat proxy (one settlement queue to
  // drain) for every streamed provider route.
  const upstream = new UpstreamClient();
  const proxy = new ChatProxy(deps, upstream);
  app.use(chatRoutes(deps, proxy));
  app.use(imageRoutes(deps, upstream));
  app.use(responseRoutes(deps, proxy));
  // Last: its creation paths are /api/v1/<provider>/<operation> for any provider.
  app.use(taskRoutes(deps));
  app.use(notFound);
  app.use(errorHandler);
  return Object.assign(app, { closeRoutes: async () => void (await Promise.all([proxy.settlements.drain(), upstream.close()])) });
}
