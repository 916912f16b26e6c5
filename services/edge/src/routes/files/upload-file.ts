import { fileRepository, newId, uploadExpiry } from '@gensvc/db';
import { errors, isAppError } from '@gensvc/errors';
import { deleteObject, fileObjectKey } from '@gensvc/storage';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { uploadDeadline } from '../../http/body-deadline';
import { declaredTooLarge } from '../../http/declared-length';
import { formatBytes } from '../../http/errors';
import { locals } from '../../http/request-context';
import { sanitizeFilename } from '@gensvc/media';
import { fileObject } from './file-object';
import { FORM_OVERHEAD_BYTES, receiveUpload } from './receive-upload';
import { MAX_UPLOAD_BYTES, UPLOAD_PURPOSES } from './schema';

/**
 * POST /v1/files and /api/v1/files — multipart `file` + `purpose`. The bytes go to S3 while they arrive; the row is
 * written only once they are all stored, and on any refusal nothing is left in S3 or Postgres.
 */
export function uploadFile(deps: Pick<EdgeDeps, 'config' | 'db' | 's3'>) {
  return async (req: Request, res: Response) => {
    const { key: apiKey, workspace } = authOf(res);
    if (declaredTooLarge(req, MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES)) {
      res.setHeader('Connection', 'close');
      throw errors.payloadTooLarge(formatBytes(MAX_UPLOAD_BYTES));
    }
    const id = newId('file');
    const storageKey = fileObjectKey(workspace.id, id);
    let upload: Awaited<ReturnType<typeof receiveUpload>>;
    try {
      upload = await receiveUpload(req, {
        s3: deps.s3,
        bucket: deps.config.s3.bucket,
        key: storageKey,
        maxBytes: MAX_UPLOAD_BYTES,
        purposes: UPLOAD_PURPOSES,
        deadline: uploadDeadline(deps.config.http),
      });
    } catch (e) {
      if (isAppError(e) && e.status >= 500) locals(res).log.error({ err: e.cause ?? e }, 'upload could not be stored');
      throw e;
    }
    const createdAt = new Date();
    let file: Awaited<ReturnType<typeof fileRepository.create>>;
    try {
      file = await fileRepository.create(deps.db, {
        id,
        workspaceId: workspace.id,
        source: 'upload',
        purpose: upload.purpose,
        filename: sanitizeFilename(upload.filename, upload.media.extensions),
        contentType: upload.media.contentType,
        bytes: BigInt(upload.bytes),
        sha256: upload.sha256,
        storageKey,
        createdAt,
        ...uploadExpiry(createdAt),
        createdById: apiKey.creatorId ?? null,
      });
    } catch (e) {
      await deleteObject(deps.s3, deps.config.s3.bucket, storageKey).catch(() => {});
      throw e;
    }
    res.json(await fileObject(deps.config, file, []));
  };
}
