import { createPresignS3 } from '@gensvc/storage';
import express from 'express';
import { authenticate, requireKeyRole, requireScope } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { rateLimit } from '../../limits/rate-limit';
import { deleteFile } from './delete-file';
import { getFile } from './get-file';
import { getFileContent } from './get-file-content';
import { getSignedUrl } from './get-signed-url';
import { listFiles } from './list-files';
import { uploadFile } from './upload-file';

/** The Files API (spec §4.4), under both /v1/files and /api/v1/files: the same operations either way. */
export function fileRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const bearer = authenticate(deps, 'bearer');
  const scope = requireScope('files.write');
  const uploadRate = rateLimit(deps, { bucket: 'uploads', limitOf: (auth) => auth.workspace.uploadRpm });
  // Delivery links are signed for {file_url} itself (FILE_BASE_URL, by default the S3 endpoint): the host is signed.
  const presignS3 = createPresignS3(deps.config.s3, deps.config.fileBaseUrl);

  for (const base of ['/v1/files', '/api/v1/files']) {
    router.post(base, bearer, scope, uploadRate, uploadFile(deps));
    router.get(base, bearer, scope, listFiles(deps));
    router.get(`${base}/:fileId`, bearer, scope, getFile(deps));
    router.delete(`${base}/:fileId`, bearer, scope, requireKeyRole('deleteFiles'), deleteFile(deps));
    router.get(`${base}/:fileId/content`, getFileContent(deps));
    router.get(`${base}/:fileId/signed_url`, bearer, scope, getSignedUrl(deps, presignS3));
  }
  return router;
}
