import { taskRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { publishTaskFinished, scheduleCallback, scheduleCancel } from '@gensvc/queue';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { findTask, renderTask } from './render-task';
import { TASK_ID } from './schema';

/**
 * POST /api/v1/tasks/{task_id}/cancel — queued or running → canceled, its hold given back, in one transaction
 * (taskRepository.finish). A task whose result is already recorded cannot be canceled any more (409): the success
 * won the race and is charged. Then the provider's job is canceled (when it had one), the callback is sent, and a
 * caller waiting on the task is told.
 */
export function cancelTask(deps: Pick<EdgeDeps, 'config' | 'db' | 'queues'>) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const { workspace } = authOf(res);
    const id = req.params.taskId;
    const { requestId, log } = locals(res);
    const task = TASK_ID.test(id)
      ? await taskRepository.finish(deps.db, id, { status: 'canceled' }, { workspaceId: workspace.id })
      : null;
    if (!task) throw errors.taskNotCancelable((await findTask(deps, workspace.id, id)).status);
    // The cancel is committed; what follows is the aftermath. A job that cannot be queued is logged, not answered:
    // the reconciler re-ensures pending callbacks, and the provider's job ends at its own deadline.
    const jobs: Promise<unknown>[] = [];
    const ref = { taskId: id, workspaceId: workspace.id, requestId };
    if (task.upstreamId) jobs.push(scheduleCancel(deps.queues, ref));
    if (task.callback) jobs.push(scheduleCallback(deps.queues, ref, task.callbackRoundStart, { first: true }));
    // A caller waiting on the task (Prefer: wait, on any edge) is answered with it canceled.
    jobs.push(publishTaskFinished(deps.queues.connection, deps.queues.prefix, id, log));
    for (const outcome of await Promise.allSettled(jobs)) {
      if (outcome.status === 'rejected')
        log.error({ err: outcome.reason, task_id: id }, 'task cancel: a follow-up job could not be queued');
    }
    res.json(await renderTask(deps, task, workspace.currency));
  };
}
