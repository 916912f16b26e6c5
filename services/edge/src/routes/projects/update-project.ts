import { projectRepository } from '@gensvc/db';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { parseBody } from '../../http/parse-body';
import type { ActorOf } from './actor';
import { findProject, noSuchProject, projectObject } from './project-object';
import { updateProjectBody } from './schema';

/** PATCH …/projects/{id} — a new name or description. */
export function updateProject(deps: Pick<EdgeDeps, 'db'>, actorOf: ActorOf) {
  return async (req: Request<{ projectId: string }>, res: Response) => {
    const { workspaceId } = actorOf(res);
    const id = req.params.projectId;
    await findProject(deps.db, workspaceId, id);
    const body = parseBody(updateProjectBody, req.body);
    const patch = {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
    };
    const updated = await projectRepository.update(deps.db, workspaceId, id, patch);
    if (!updated) throw noSuchProject(id);
    res.json(projectObject(updated));
  };
}
