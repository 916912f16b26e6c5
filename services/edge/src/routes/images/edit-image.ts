import { idempotencyRepository, newId } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { UpstreamClient } from '@gensvc/upstream';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { ownerOf } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { declaredTooLarge } from '../../http/declared-length';
import { formatBytes } from '../../http/errors';
import { locals } from '../../http/request-context';
import { editRequestHash, replayedAnswer, startIdempotency, storedAnswer } from './edit-idempotency';
import { resolveImages } from './image-inputs';
import { uploadDeadline } from '../../http/body-deadline';
import { readEditRequest } from './read-edit-request';
import { recordEdit } from './record-edit';
import { MAX_EDIT_REQUEST_BYTES, MAX_IMAGES, parseEditFields } from './schema';
import { callEdit, resolveImageModel } from './upstream-edit';

/**
 * POST /v1/images/edits (and /api/v1/images/edits) — OpenAI's images edit, multipart or JSON with image_url.
 *
 * Order, so that a refusal costs nothing and leaves nothing: read and bound the body, validate, resolve the model,
 * take the Idempotency-Key, fetch the referenced images, hold unitPrice × n, call the channels (failover), then
 * archive, record and charge unitPrice × results in one go. Any failure after the hold releases it.
 */
export function editImage(deps: EdgeDeps, client: UpstreamClient) {
  return async (req: Request, res: Response) => {
    const { key, workspace } = authOf(res);
    const { log, requestId } = locals(res);
    if (declaredTooLarge(req, MAX_EDIT_REQUEST_BYTES)) {
      res.setHeader('Connection', 'close');
      throw errors.payloadTooLarge(formatBytes(MAX_EDIT_REQUEST_BYTES));
    }
    let request: Awaited<ReturnType<typeof readEditRequest>>;
    try {
      request = await readEditRequest(req, uploadDeadline(deps.config.http));
    } catch (e) {
      // The rest of a refused body was not read: close rather than read it for the next request on this socket.
      if (!req.complete) res.setHeader('Connection', 'close');
      throw e;
    }
    const fields = parseEditFields(request.fields);
    const count = request.images.length;
    if (count === 0)
      throw errors.invalidRequest(
        'Send at least one image: as files in "image" (or "image[]"), or as image_url.',
        'image',
      );
    if (count > MAX_IMAGES) throw errors.invalidRequest(`Send at most ${MAX_IMAGES} images; got ${count}.`, 'image');
    const { model, routes } = await resolveImageModel(deps.catalog, key, fields.model);

    const idempotency = await startIdempotency(
      deps.db,
      workspace.id,
      req.get('idempotency-key'),
      editRequestHash(req.path, request),
    );
    if (idempotency.state === 'replay') {
      const body = await replayedAnswer({ s3: deps.s3, bucket: deps.config.s3.bucket }, workspace.id, idempotency.body);
      res.setHeader('Idempotent-Replayed', 'true');
      res.status(idempotency.status).json(body);
      return;
    }

    let answer: Record<string, unknown>;
    try {
      const { images, mask } = await resolveImages(deps, workspace.id, request.images, request.mask);
      const n = Number(fields.n ?? 1);
      const startedAt = new Date();
      // Kept as a row of its own: the charge is written in the transaction that records the task and its files.
      const hold = await deps.holds.reserve(ownerOf(res), model.unitPrice * BigInt(n), { kept: true });
      try {
        const edited = await callEdit(client, deps.breaker, { model, routes, fields, images, mask }, log);
        answer = await recordEdit(
          deps,
          {
            taskId: newId('tsk'),
            requestId,
            workspaceId: workspace.id,
            apiKeyId: key.id,
            modelId: model.id,
            fields,
            images,
            mask,
            answer: edited,
            hold,
            // A provider answering more results than asked for is charged no more than the hold.
            cost: model.unitPrice * BigInt(Math.min(edited.outputs.length, n)),
            startedAt,
          },
          log,
        );
      } catch (e) {
        await hold.release();
        throw e;
      }
    } catch (e) {
      if (idempotency.state === 'new') {
        await idempotencyRepository
          .abandon(deps.db, idempotency.id)
          .catch((err) => log.error({ err }, 'could not forget the idempotency key'));
      }
      throw e;
    }
    if (idempotency.state === 'new') {
      await idempotencyRepository
        .complete(deps.db, idempotency.id, 200, storedAnswer(answer))
        .catch((err) => log.error({ err }, 'could not store the idempotent answer'));
    }
    res.status(200).json(answer);
  };
}
