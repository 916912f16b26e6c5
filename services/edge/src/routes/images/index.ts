import express from 'express';
import { authenticate, requireScope } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { rateLimit } from '../../limits/rate-limit';
import { UpstreamClient } from '../../proxy/upstream-http';
import { editImage } from './edit-image';
import { MAX_EDIT_REQUEST_BYTES } from './schema';

export type ImageRouter = express.Router & {
  /** Closes the upstream connections: call it in shutdown, after HTTP stops. */
  close(): Promise<void>;
};

/**
 * POST /v1/images/edits (spec §4), also under /api/v1. A paid call: the chain of paidCall (billing/paid-call.ts)
 * except its Idempotency-Key step, which parses JSON only; the handler takes the key itself for both encodings
 * (edit-idempotency.ts).
 *
 * Scope: tasks.write. There is no images scope; an edit creates a generation task (recorded as a Task row that owns
 * its archived outputs), which is what tasks.write grants.
 */
export function imageRoutes(deps: EdgeDeps): ImageRouter {
  const router = express.Router({ caseSensitive: true });
  const client = new UpstreamClient();
  router.post(
    ['/v1/images/edits', '/api/v1/images/edits'],
    authenticate(deps, 'bearer'),
    requireScope('tasks.write'),
    rateLimit(deps, { bucket: 'paid', limitOf: (auth) => auth.workspace.rpm }),
    jsonBody(MAX_EDIT_REQUEST_BYTES),
    editImage(deps, client),
  );
  return Object.assign(router, { close: () => client.close() });
}
