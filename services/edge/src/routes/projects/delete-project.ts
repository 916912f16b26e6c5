import { projectRepository } from '@gensvc/db';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import type { ActorOf } from './actor';
import { noSuchProject } from './project-object';
import { PROJECT_ID } from './schema';

/**
 * DELETE …/projects/{id} — admins and owners (the router checks the role). No file is deleted: those this project
 * alone kept get their retention back.
 */
export function deleteProject(deps: Pick<EdgeDeps, 'db'>, actorOf: ActorOf) {
  return async (req: Request<{ projectId: string }>, res: Response) => {
    const id = req.params.projectId;
    const deleted = PROJECT_ID.test(id) && (await projectRepository.delete(deps.db, actorOf(res).workspaceId, id));
    if (!deleted) throw noSuchProject(id);
    res.json({ id, object: 'project', deleted: true });
  };
}
