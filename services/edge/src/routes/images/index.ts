import type { UpstreamClient } from '@gensvc/upstream';
import express from 'express';
import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { editImage } from './edit-image';
import { MAX_EDIT_REQUEST_BYTES } from './schema';

/**
 * POST /v1/images/edits (spec §4), also under /api/v1. A paid call without paidCall's Idempotency-Key step, which
 * parses JSON only; the handler takes the key itself for both encodings (edit-idempotency.ts).
 *
 * Scope: tasks.write. There is no images scope; an edit creates a generation task (recorded as a Task row that owns
 * its archived outputs), which is what tasks.write grants.
 */
export function imageRoutes(deps: EdgeDeps, client: UpstreamClient): express.Router {
  const router = express.Router({ caseSensitive: true });
  router.post(
    ['/v1/images/edits', '/api/v1/images/edits'],
    ...paidCall(deps, {
      style: 'bearer',
      scope: 'tasks.write',
      bodyLimit: MAX_EDIT_REQUEST_BYTES,
      idempotency: false,
    }),
    editImage(deps, client),
  );
  return router;
}
