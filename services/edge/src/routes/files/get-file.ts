import { fileRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { fileObjects } from './file-object';
import { FILE_ID } from './schema';

export const noSuchFile = (id: string) => errors.notFound(`No file ${id}.`, { param: 'file_id' });

/** The workspace's visible file by the route's :fileId, or 404 (another workspace's file is 404 too). */
export async function findFile(deps: Pick<EdgeDeps, 'db'>, workspaceId: string, id: string) {
  const file = FILE_ID.test(id) ? await fileRepository.get(deps.db, workspaceId, id) : null;
  if (!file) throw noSuchFile(id);
  return file;
}

/** GET /v1/files/{file_id} — the file with a freshly signed content url. */
export function getFile(deps: Pick<EdgeDeps, 'config' | 'db'>) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const file = await findFile(deps, authOf(res).workspace.id, req.params.fileId);
    res.json((await fileObjects(deps, [file]))[0]);
  };
}
