import { fileRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import { deleteObject } from '@gensvc/storage';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { noSuchFile } from './get-file';
import { FILE_ID } from './schema';

/**
 * DELETE /v1/files/{file_id} — row and bytes at once. Hide, remove bytes, remove row: a failure between the steps
 * leaves a hidden, expired row that the retention sweep completes; never a listed file without bytes.
 */
export function deleteFile(deps: Pick<EdgeDeps, 'config' | 'db' | 's3'>) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const id = req.params.fileId;
    await removeFile(deps, authOf(res).workspace.id, id, locals(res).log);
    res.json({ id, object: 'file', deleted: true });
  };
}

/** Deletes a visible file of the workspace, row and bytes (the API's delete and the dashboard's); 404 when none. */
export async function removeFile(
  deps: Pick<EdgeDeps, 'config' | 'db' | 's3'>,
  workspaceId: string,
  id: string,
  log: Logger,
) {
  const marked = FILE_ID.test(id) ? await fileRepository.markDeleted(deps.db, workspaceId, id) : null;
  if (!marked) throw noSuchFile(id);
  try {
    await deleteObject(deps.s3, deps.config.s3.bucket, marked.storageKey);
  } catch (cause) {
    log.error({ err: cause, file_id: id }, 'file delete: the object could not be removed');
    throw errors.storageUnavailable(
      'The file is deleted from the workspace, but its bytes ' +
        'could not be removed yet; the hourly cleanup removes them.',
      cause,
    );
  }
  await fileRepository.remove(deps.db, workspaceId, id);
}
