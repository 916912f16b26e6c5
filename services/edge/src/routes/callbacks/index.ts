import express from 'express';
import { authenticate, requireKeyRole, requireScope } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { recoverParked } from './recover';
import { testCallback } from './test-callback';

/** Tools for callback receivers: recovery of parked deliveries and a test callback; as a redelivery, admins' keys. */
export function callbackRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const guard = [authenticate(deps, 'bearer'), requireScope('tasks.write'), requireKeyRole('redeliver')];
  const json = jsonBody({ limitBytes: 16 * 1024, timeouts: deps.config.http });
  router.post('/api/v1/callbacks/recover', ...guard, json, recoverParked(deps));
  router.post('/api/v1/callbacks/test', ...guard, json, testCallback(deps));
  return router;
}
