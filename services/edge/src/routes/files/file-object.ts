import { fileContentLink } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import type { FileRow } from '@gensvc/db';
import { contentDisposition } from '@gensvc/media';

/**
 * The file as every answer shows it (spec §2.4 plus created_at, expires_at, source and, for outputs, archive_status).
 * Its url is the signed, one-hour content link of spec §2.4: {base_url}/api/v1/files/<id>/content?token=<jws>.
 */
export async function fileObject(config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>, file: FileRow) {
  const link = await fileContentLink(config.publicBaseUrl, config.signingSecret, {
    fileId: file.id,
    workspaceId: file.workspaceId,
  });
  return {
    id: file.id,
    object: 'file' as const,
    bytes: Number(file.bytes),
    filename: file.filename,
    purpose: file.purpose,
    content_type: file.contentType,
    url: link.url,
    created_at: file.createdAt.toISOString(),
    expires_at: file.expiresAt?.toISOString() ?? null,
    source: file.source,
    ...(file.source === 'generated' ? { archive_status: file.archiveStatus } : {}),
  };
}

/** Media are shown in place; documents are downloaded, so a PDF never renders under our origin. */
export function dispositionFor(file: Pick<FileRow, 'contentType' | 'filename'>): string {
  return contentDisposition(file.contentType === 'application/pdf' ? 'attachment' : 'inline', file.filename);
}
