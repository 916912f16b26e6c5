import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import type { ActorOf } from './actor';
import { findProject, projectObject } from './project-object';

/** GET …/projects/{id} */
export function getProject(deps: Pick<EdgeDeps, 'db'>, actorOf: ActorOf) {
  return async (req: Request<{ projectId: string }>, res: Response) => {
    res.json(projectObject(await findProject(deps.db, actorOf(res).workspaceId, req.params.projectId)));
  };
}
