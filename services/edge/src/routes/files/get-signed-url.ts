import type { S3Client } from '@aws-sdk/client-s3';
import { errors } from '@gensvc/errors';
import { presignGetObject } from '@gensvc/storage';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { dispositionFor } from './file-object';
import { findFile } from './get-file';

const SIGNED_URL_TTL_SECONDS = 3600;
const TIERS = ['team', 'enterprise'];

/**
 * GET /api/v1/files/{file_id}/signed_url — a presigned S3 GetObject link on {file_url}, one hour (Team and
 * Enterprise). `presignS3` is the client whose endpoint is the public file host.
 */
export function getSignedUrl(deps: Pick<EdgeDeps, 'config' | 'db'>, presignS3: S3Client) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const { workspace } = authOf(res);
    if (!TIERS.includes(workspace.tier)) {
      throw errors.tierNotAllowed(`Signed delivery links (this workspace is on the ${workspace.tier} tier)`, [
        'Team',
        'Enterprise',
      ]);
    }
    const file = await findFile(deps, workspace.id, req.params.fileId);
    const expiresAt = new Date(Date.now() + SIGNED_URL_TTL_SECONDS * 1000);
    const url = await presignGetObject(presignS3, deps.config.s3.bucket, file.storageKey, {
      expiresInSeconds: SIGNED_URL_TTL_SECONDS,
      contentDisposition: dispositionFor(file),
      contentType: file.contentType,
    });
    res.json({ url, expires_at: expiresAt.toISOString() });
  };
}
