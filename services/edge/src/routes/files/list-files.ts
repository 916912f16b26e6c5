import { fileRepository, projectRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { fileObjects } from './file-object';
import { noSuchProject } from '../projects/project-object';
import { parseListQuery } from './schema';

/**
 * GET /v1/files — the workspace's uploads and generated outputs in (created_at, id) order, cursor `after`; with
 * `project_id`, those attached to that project.
 */
export function listFiles(deps: Pick<EdgeDeps, 'config' | 'db'>) {
  return async (req: Request, res: Response) => {
    const { workspace } = authOf(res);
    const q = parseListQuery(req.query);
    // Another workspace's project is as unknown as a missing one.
    if (q.project_id !== undefined && !(await projectRepository.get(deps.db, workspace.id, q.project_id)))
      throw noSuchProject(q.project_id);
    const { project_id: projectId, ...rest } = q;
    const page = await fileRepository.list(deps.db, workspace.id, {
      ...rest,
      ...(projectId !== undefined ? { projectId } : {}),
    });
    if (!page) throw errors.invalidRequest(`after: no file ${q.after} in this workspace.`, 'after');
    const data = await fileObjects(deps, page.data);
    res.json({
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    });
  };
}
