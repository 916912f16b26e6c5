import { taskRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import { scheduleCallback } from '@gensvc/queue';
import { deliveryIdFor } from '@gensvc/webhooks';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { findTask } from './render-task';
import { TASK_ID } from './schema';

/**
 * POST /api/v1/tasks/{task_id}/redeliver — a new round of up to five attempts for a finished task's callback,
 * whether the last round was delivered, parked or is still going; its first attempt runs now.
 */
export function redeliver(deps: Pick<EdgeDeps, 'db' | 'queues'>) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const id = req.params.taskId;
    const { requestId, log } = locals(res);
    const attempt = await startRedelivery(deps, authOf(res).workspace.id, id, requestId, log);
    res.status(202).json({ object: 'delivery', task_id: id, attempt, delivery_id: deliveryIdFor(id, attempt) });
  };
}

/** Starts a new delivery round of the workspace's task (the API's redeliver and the dashboard's); its first attempt. */
export async function startRedelivery(
  deps: Pick<EdgeDeps, 'db' | 'queues'>,
  workspaceId: string,
  id: string,
  requestId: string,
  log: Logger,
): Promise<number> {
  const round = TASK_ID.test(id) ? await taskRepository.redeliver(deps.db, workspaceId, id) : null;
  if (!round) {
    const task = await findTask(deps, workspaceId, id);
    throw errors.notRedeliverable(
      task.callbackUrl === null
        ? 'The task has no callback_url: there is nothing to deliver.'
        : `The task is ${task.status}: its result is delivered once it has finished.`,
    );
  }
  const { attempt } = round;
  try {
    await scheduleCallback(deps.queues, { taskId: id, workspaceId, requestId }, attempt, { promote: true });
  } catch (err) {
    // The round is recorded (callback pending): the reconciler re-ensures its job.
    log.error({ err, task_id: id, attempt }, 'redeliver: callback.deliver could not be queued; the reconciler will');
  }
  return attempt;
}
