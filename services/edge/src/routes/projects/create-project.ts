import { MAX_PROJECTS_PER_WORKSPACE, newId, projectRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { parseBody } from '../../http/parse-body';
import type { ActorOf } from './actor';
import { projectObject } from './project-object';
import { createProjectBody } from './schema';

/** POST …/projects — a new project of the workspace, made by the actor; 400 past the workspace's limit. */
export function createProject(deps: Pick<EdgeDeps, 'db'>, actorOf: ActorOf) {
  return async (req: Request, res: Response) => {
    const body = parseBody(createProjectBody, req.body);
    const { workspaceId, userId } = actorOf(res);
    const made = await projectRepository.create(deps.db, {
      id: newId('proj'),
      workspaceId,
      name: body.name,
      description: body.description ?? '',
      createdById: userId,
    });
    if (!made.ok)
      throw errors.invalidRequest(
        `A workspace has at most ${MAX_PROJECTS_PER_WORKSPACE} projects (the limit); delete one to make another.`,
      );
    res.status(201).json(projectObject(made.project));
  };
}
