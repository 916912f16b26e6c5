import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { findTask, renderTask, type RenderDeps } from './render-task';

/** GET /api/v1/tasks/{task_id} — the envelope of spec §2.5, the same one a callback carries. */
export function getTask(deps: RenderDeps) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const { workspace } = authOf(res);
    const task = await findTask(deps, workspace.id, req.params.taskId);
    res.json(await renderTask(deps, task, workspace.currency));
  };
}
