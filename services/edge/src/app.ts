import { UpstreamClient } from '@gensvc/upstream';
import express from 'express';
import { authenticate, requireKeyRole, requireScope } from './auth/authenticate';
import type { EdgeDeps } from './deps';
import { errorHandler, notFound } from './http/errors';
import { httpMetrics } from './http/metrics';
import { pathGuard } from './http/path-guard';
import { boundUnreadBody } from './http/unread-body';
import { requestContext } from './http/request-context';
import { countRefusals } from './billing/refusal-metrics';
import { API_OPERATIONS } from './openapi/operations';
import { openApiRoutes } from './openapi/routes';
import { ChatProxy } from './proxy/chat-proxy';
import { chatRoutes } from './routes/chat';
import { dashboardRoutes } from './routes/dashboard';
import { dashboardStatic } from './routes/dashboard/static';
import { healthz } from './routes/health/healthz';
import { readyz } from './routes/health/readyz';
import { evaluateRoutes } from './routes/evaluate';
import type { EvaluateOptions } from './routes/evaluate/evaluate';
import { fileRoutes } from './routes/files';
import { imageRoutes } from './routes/images';
import { modelRoutes } from './routes/models';
import { projectRoutes } from './routes/projects';
import { getCallbackSecret, retirePreviousCallbackSecret, rotateCallbackSecret } from './routes/me/callback-secret';
import { getBalance } from './routes/me/get-balance';
import { responseRoutes } from './routes/responses';
import { providerWebhookRoutes } from './routes/provider-webhooks/provider-webhooks';
import { taskRoutes } from './routes/tasks';
import { callbackRoutes } from './routes/callbacks';
import { getUsage } from './routes/usage/get-usage';

export type EdgeApp = express.Express & {
  /**
   * Once HTTP has stopped: closes upstream connections and waits for the provider webhooks' poll promotions in flight
   * (the leases, closed with the deps, write the last charges).
   */
  closeRoutes(): Promise<void>;
};

export interface AppOptions {
  /** How long POST /api/v1/evaluate waits for its answer; DEFAULT_EVALUATE_OPTIONS by default (tests shorten it). */
  evaluate?: Partial<EvaluateOptions>;
}

/** The edge's Express app, without listening: main.ts listens, tests listen on port 0. */
export function buildApp(deps: EdgeDeps, options: AppOptions = {}): EdgeApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('case sensitive routing', true);
  // req.ip (sign-in throttling, logs) is the client's address as the trusted proxies forward it (TRUST_PROXY).
  app.set('trust proxy', deps.config.trustProxy);

  // Before any route: a path or query that cannot be decoded is a 400, and a body left unread after an answer is
  // bounded.
  app.use(requestContext(deps.logger), httpMetrics(deps.metrics), pathGuard, boundUnreadBody(deps.config.http));
  // One upstream connection pool for every route that calls channels; one chat proxy (its charges go through the
  // replica's budget leases) for every streamed provider route. The chat routes come first: the paid hot path
  // passes no other route's layers (none of theirs matches a chat path).
  const upstream = new UpstreamClient();
  const proxy = new ChatProxy(deps, upstream);
  app.use(chatRoutes(deps, proxy));

  app.get('/healthz', healthz);
  app.get('/readyz', readyz(deps));
  app.use(openApiRoutes({ publicBaseUrl: deps.config.publicBaseUrl, operations: API_OPERATIONS }));

  const bearer = authenticate(deps, 'bearer');
  app.get('/api/v1/me/balance', bearer, requireScope('account.read'), getBalance(deps));
  app.get('/api/v1/usage', bearer, requireScope('account.read'), getUsage(deps));
  app.get(
    '/api/v1/me/callback-secret',
    bearer,
    requireScope('tasks.write'),
    requireKeyRole('callbackSecret'),
    getCallbackSecret(deps),
  );
  app.post(
    '/api/v1/me/callback-secret/rotate',
    bearer,
    requireScope('tasks.write'),
    requireKeyRole('callbackSecret'),
    rotateCallbackSecret(deps),
  );
  app.post(
    '/api/v1/me/callback-secret/retire-previous',
    bearer,
    requireScope('tasks.write'),
    requireKeyRole('callbackSecret'),
    retirePreviousCallbackSecret(deps),
  );

  app.use(modelRoutes(deps));
  app.use(evaluateRoutes(deps, options.evaluate));
  app.use(fileRoutes(deps));
  app.use(projectRoutes(deps));
  app.use(imageRoutes(deps, upstream));
  app.use(responseRoutes(deps, proxy));
  app.use(dashboardRoutes(deps));
  app.use(callbackRoutes(deps));
  // Last: its creation paths are /api/v1/<provider>/<operation> for any provider.
  app.use(taskRoutes(deps));
  const providerWebhooks = providerWebhookRoutes(deps);
  app.use(providerWebhooks.router);
  app.use(dashboardStatic({ fileBaseUrl: deps.config.fileBaseUrl }));
  app.use(notFound);
  app.use(countRefusals(deps.metrics), errorHandler);
  // Charges of answered calls are written by the budget leases, closed with the deps (after this), as are the queues
  // the webhooks' promotions use.
  return Object.assign(app, {
    closeRoutes: async () => void (await Promise.allSettled([upstream.close(), providerWebhooks.close()])),
  });
}
