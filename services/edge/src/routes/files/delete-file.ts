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
  await removeHiddenFile(deps, workspaceId, id, marked.storageKey, log, 'The file is deleted from the workspace');
}

/**
 * The last two steps of a delete, once the row is hidden (expired): the bytes, then the row. A failure leaves the
 * hidden row, which the retention sweep completes; `done` says what has already happened, for the 503's message.
 */
export async function removeHiddenFile(
  deps: Pick<EdgeDeps, 'config' | 'db' | 's3'>,
  workspaceId: string,
  id: string,
  storageKey: string,
  log: Logger,
  done: string,
) {
  try {
    await deleteObject(deps.s3, deps.config.s3.bucket, storageKey);
  } catch (cause) {
    log.error({ err: cause, file_id: id }, 'file delete: the object could not be removed');
    throw errors.storageUnavailable(
      `${done}, but its bytes could not be removed yet; the hourly cleanup removes them.`,
      cause,
    );
  }
  await fileRepository.remove(deps.db, workspaceId, id);
}
