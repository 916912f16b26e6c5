import { MAX_FILES_PER_PROJECT, projectRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { parseBody } from '../../http/parse-body';
import { fileObjects } from '../files/file-object';
import { findFile, noSuchFile } from '../files/get-file';
import type { ActorOf } from './actor';
import { noSuchProject } from './project-object';
import { FILE_ID, PROJECT_ID, attachFileBody } from './schema';

/**
 * POST …/projects/{id}/files {file_id} — attaches an upload or a generated output; attaching it again changes nothing.
 * Answers the file, now without expiry.
 */
export function attachFile(deps: Pick<EdgeDeps, 'db' | 'config'>, actorOf: ActorOf) {
  return async (req: Request<{ projectId: string }>, res: Response) => {
    const { workspaceId } = actorOf(res);
    const projectId = req.params.projectId;
    if (!PROJECT_ID.test(projectId)) throw noSuchProject(projectId);
    const fileId = parseBody(attachFileBody, req.body).file_id;
    if (!FILE_ID.test(fileId)) throw noSuchFile(fileId);
    const result = await projectRepository.attach(deps.db, workspaceId, projectId, fileId);
    if (result === 'no_project') throw noSuchProject(projectId);
    if (result === 'no_file') throw noSuchFile(fileId);
    if (result === 'project_full')
      throw errors.invalidRequest(
        `A project holds at most ${MAX_FILES_PER_PROJECT} files (the limit); detach one to attach another.`,
        'file_id',
      );
    const [file] = await fileObjects(deps, [await findFile(deps, workspaceId, fileId)]);
    res.json(file);
  };
}
