import { projectRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { fileObjects } from '../files/file-object';
import { findFile } from '../files/get-file';
import type { ActorOf } from './actor';
import { noSuchProject } from './project-object';
import { FILE_ID, PROJECT_ID } from './schema';

/**
 * DELETE …/projects/{id}/files/{file_id} — the file stays; held by no other project, its retention runs again
 * (expires_at shows when it goes). Answers the file.
 */
export function detachFile(deps: Pick<EdgeDeps, 'db' | 'config'>, actorOf: ActorOf) {
  return async (req: Request<{ projectId: string; fileId: string }>, res: Response) => {
    const { workspaceId } = actorOf(res);
    const { projectId, fileId } = req.params;
    if (!PROJECT_ID.test(projectId)) throw noSuchProject(projectId);
    const result = FILE_ID.test(fileId)
      ? await projectRepository.detach(deps.db, workspaceId, projectId, fileId)
      : 'not_attached';
    if (result === 'no_project') throw noSuchProject(projectId);
    if (result === 'not_attached')
      throw errors.notFound(`No file ${fileId.slice(0, 64)} in project ${projectId}.`, { param: 'file_id' });
    const [file] = await fileObjects(deps, [await findFile(deps, workspaceId, fileId)]);
    res.json(file);
  };
}
