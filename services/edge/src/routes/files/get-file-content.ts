import { pipeline } from 'node:stream';
import { verifyFileToken } from '@gensvc/auth';
import { fileRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { getObjectStream } from '@gensvc/storage';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseByteRange } from './byte-range';
import { dispositionFor } from './file-object';
import { noSuchFile } from './get-file';

/**
 * GET /api/v1/files/{file_id}/content?token=… — no API key: the signed token is the credential (DESIGN.md §5).
 * Streams from S3, one byte range at most.
 */
export function getFileContent(deps: Pick<EdgeDeps, 'config' | 'db' | 's3'>) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const token = req.query.token;
    const claims = typeof token === 'string' && token ? await verifyFileToken(deps.config.signingSecret, token) : null;
    if (!claims || claims.fileId !== req.params.fileId) throw errors.invalidFileToken();
    const file = await fileRepository.get(deps.db, claims.workspaceId, claims.fileId);
    if (!file) throw noSuchFile(claims.fileId);

    const size = Number(file.bytes);
    const range = parseByteRange(req.get('range'), size);
    if (range === 'unsatisfiable') throw errors.rangeNotSatisfiable(size);
    // Headers of the content go on only once the bytes are in hand: an error answer must stay plain JSON.
    const contentHeaders = (length: number) => {
      res.status(range ? 206 : 200);
      res.setHeader('Accept-Ranges', 'bytes');
      res.setHeader('Content-Type', file.contentType);
      res.setHeader('Content-Disposition', dispositionFor(file));
      res.setHeader('Content-Length', String(length));
      if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    };
    if (req.method === 'HEAD') {
      contentHeaders(range ? range.end - range.start + 1 : size);
      res.end();
      return;
    }

    const abort = new AbortController();
    res.once('close', () => abort.abort());
    const object = await getObjectStream(
      deps.s3,
      deps.config.s3.bucket,
      file.storageKey,
      range ?? undefined,
      abort.signal,
    ).catch((cause) => {
      locals(res).log.error({ err: cause, file_id: file.id }, 'file content: the object could not be read');
      throw errors.storageUnavailable('The file cannot be read right now; try again.', cause);
    });
    if (!object) throw noSuchFile(file.id); // deleted between the row read and the get
    contentHeaders(object.contentLength);
    pipeline(object.body, res, (err) => {
      // A caller that hangs up mid-way is routine; anything else (S3 failing mid-stream) is worth a line.
      if (err && (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
        locals(res).log.warn({ err, file_id: file.id }, 'file content stream failed');
      }
    });
  };
}
