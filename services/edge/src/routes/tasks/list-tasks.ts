import { taskRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { renderTasks, type RenderDeps } from './render-task';
import { parseListQuery } from './schema';

/**
 * GET /api/v1/tasks — the workspace's tasks in (created_at, id) order, cursor `after`, optionally of one status; the
 * envelope of the files list (DESIGN.md §4).
 */
export function listTasks(deps: RenderDeps) {
  return async (req: Request, res: Response) => {
    const { workspace } = authOf(res);
    const q = parseListQuery(req.query);
    const page = await taskRepository.list(deps.db, workspace.id, q);
    if (!page) throw errors.invalidRequest(`after: no task ${q.after} in this workspace.`, 'after');
    const data = await renderTasks(deps, page.data, workspace.currency);
    res.json({
      object: 'list',
      data,
      first_id: data[0]?.task_id ?? null,
      last_id: data.at(-1)?.task_id ?? null,
      has_more: page.hasMore,
    });
  };
}
