import { projectRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import type { ActorOf } from './actor';
import { projectObject } from './project-object';
import { parseListProjectsQuery } from './schema';

/** GET …/projects — the workspace's projects in (created_at, id) order, cursor `after`: the files list's envelope. */
export function listProjects(deps: Pick<EdgeDeps, 'db'>, actorOf: ActorOf) {
  return async (req: Request, res: Response) => {
    const q = parseListProjectsQuery(req.query);
    const page = await projectRepository.list(deps.db, actorOf(res).workspaceId, q);
    if (!page) throw errors.invalidRequest(`after: no project ${q.after} in this workspace.`, 'after');
    const data = page.data.map(projectObject);
    res.json({
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    });
  };
}
