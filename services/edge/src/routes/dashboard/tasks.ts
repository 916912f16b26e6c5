// Tasks and their deliveries, the callback signing secret: the dashboard's views of what the API's task routes do.
import { callbackRepository, taskRepository, type CallbackSecretView } from '@gensvc/db';
import { newCallbackSecret } from '@gensvc/webhooks';
import type { Request, Response } from 'express';
import { memberOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseBody, parseFields } from '../../http/parse-body';
import { errors } from '@gensvc/errors';
import { recoverParkedDeliveries } from '../callbacks/recover';
import { RECOVER_BODY, TEST_CALLBACK_BODY } from '../callbacks/schema';
import { sendTestCallback } from '../callbacks/test-callback';
import { startRedelivery } from '../tasks/redeliver';
import { findTask, renderTask } from '../tasks/render-task';
import { TASKS_QUERY } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 'config' | 'queues' | 'secrets' | 'outbound' | 'rateSlots'>;

/** GET …/tasks — newest first, optionally of one status. */
export function listTasks(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(TASKS_QUERY, req.query);
    const { workspace } = memberOf(res);
    const page = await taskRepository.list(deps.db, workspace.id, {
      limit: q.limit,
      order: 'desc',
      ...(q.after ? { after: q.after } : {}),
      ...(q.status ? { status: q.status } : {}),
    });
    if (!page) throw errors.invalidRequest(`after: no task ${q.after} in this workspace.`, 'after');
    const data = page.data.map((t) => ({
      task_id: t.id,
      status: t.status,
      model: t.model,
      operation: t.operation,
      error_code: t.errorCode,
      created_at: t.createdAt.toISOString(),
      completed_at: t.completedAt?.toISOString() ?? null,
      callback_state: t.callbackState,
    }));
    res.json({ data, has_more: page.hasMore, next_cursor: page.hasMore ? (data.at(-1)?.task_id ?? null) : null });
  };
}

/** GET …/tasks/:taskId — the envelope, what was asked, and every callback attempt. */
export function getTask(deps: Deps) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const { workspace } = memberOf(res);
    const task = await findTask(deps, workspace.id, req.params.taskId);
    const [envelope, attempts] = await Promise.all([
      renderTask(deps, task, workspace.currency),
      callbackRepository.attempts(deps.db, task.id),
    ]);
    res.json({
      task: { ...envelope, input: task.input, callback_url: task.callbackUrl, callback_state: task.callbackState },
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        delivery_id: a.deliveryId,
        status_code: a.statusCode,
        duration_ms: a.durationMs,
        error: a.error,
        created_at: a.createdAt.toISOString(),
      })),
    });
  };
}

/** POST …/tasks/:taskId/redeliver — a new round of callback attempts (admins and owners). */
export function redeliverTask(deps: Deps) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const { workspace } = memberOf(res);
    const { requestId, log } = locals(res);
    await startRedelivery(deps, workspace.id, req.params.taskId, requestId, log);
    const task = await findTask(deps, workspace.id, req.params.taskId);
    res.status(202).json({ task: await renderTask(deps, task, workspace.currency) });
  };
}

/** POST …/callbacks/recover — a new round for every delivery parked since `since`, as the API's (admins, owners). */
export function recoverParked(deps: Deps) {
  return async (req: Request, res: Response) => {
    const { since } = parseBody(RECOVER_BODY, req.body);
    const { workspace } = memberOf(res);
    const { requestId, log } = locals(res);
    res.json(await recoverParkedDeliveries(deps, workspace.id, since, requestId, log));
  };
}

/** POST …/callbacks/test — a signed sample completion to `url`, as the API's (admins, owners). */
export function testCallback(deps: Deps) {
  return async (req: Request, res: Response) => {
    const { url } = parseBody(TEST_CALLBACK_BODY, req.body);
    res.json(await sendTestCallback(deps, res, memberOf(res).workspace, url));
  };
}

const secretObject = (s: CallbackSecretView) => ({
  secret: s.secret,
  previous_expires_at: s.previousExpiresAt?.toISOString() ?? null,
});

/** GET …/callback-secret (admins and owners). */
export function getCallbackSecret(deps: Deps) {
  return async (_req: Request, res: Response) => {
    const { workspace } = memberOf(res);
    res.json(secretObject(await callbackRepository.secret(deps.db, deps.secrets, workspace.id, newCallbackSecret)));
  };
}

/** POST …/callback-secret/retire-previous — the rotation's overlap ends now: the current secret alone signs. */
export function retirePreviousCallbackSecret(deps: Deps) {
  return async (_req: Request, res: Response) => {
    const { workspace } = memberOf(res);
    res.json(
      secretObject(await callbackRepository.retirePrevious(deps.db, deps.secrets, workspace.id, newCallbackSecret)),
    );
  };
}

/** POST …/callback-secret/rotate — the old secret keeps signing beside the new one for 24 h. */
export function rotateCallbackSecret(deps: Deps) {
  return async (_req: Request, res: Response) => {
    const { workspace } = memberOf(res);
    res.json(secretObject(await callbackRepository.rotate(deps.db, deps.secrets, workspace.id, newCallbackSecret)));
  };
}
