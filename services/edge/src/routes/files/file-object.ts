import { fileContentLink } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import { projectRepository, type FileRow } from '@gensvc/db';
import { contentDisposition } from '@gensvc/media';
import type { EdgeDeps } from '../../deps';

/**
 * The file as every answer shows it (spec §2.4 plus created_at, expires_at — null while a saved project keeps it —,
 * source, the projects it is attached to and, for outputs, archive_status). Its url is the signed, one-hour content
 * link of spec §2.4: {base_url}/api/v1/files/<id>/content?token=<jws>.
 */
export async function fileObject(
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>,
  file: FileRow,
  projects: readonly string[],
) {
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
    projects: [...projects],
    ...(file.source === 'generated' ? { archive_status: file.archiveStatus } : {}),
  };
}

/** The files as answers show them, with the projects each is attached to (one query for all). */
export async function fileObjects(deps: Pick<EdgeDeps, 'config' | 'db'>, files: readonly FileRow[]) {
  const projects = await projectRepository.projectsOf(
    deps.db,
    files.map((f) => f.id),
  );
  return Promise.all(files.map((f) => fileObject(deps.config, f, projects.get(f.id) ?? [])));
}

/** Media are shown in place; documents are downloaded, so a PDF never renders under our origin. */
export function dispositionFor(file: Pick<FileRow, 'contentType' | 'filename'>): string {
  return contentDisposition(file.contentType === 'application/pdf' ? 'attachment' : 'inline', file.filename);
}
