// The outputs library: generated outputs (archived task outputs and image edits) and, in their own tab, uploads; and
// a saved project's files, shown alike. Members browse and preview; deleting (row and bytes, as the API's delete)
// needs an admin or owner.
import { fileContentPath } from '@gensvc/auth';
import { taskOutputSchema } from '@gensvc/contracts';
import { fileRepository, plusDays, projectRepository, toAmount, type LibraryQuery } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { memberOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseFields } from '../../http/parse-body';
import { removeFile, removeHiddenFile } from '../files/delete-file';
import { FILE_ID } from '../files/schema';
import { findProject } from '../projects/project-object';
import { OUTPUTS_QUERY, PROJECT_FILES_QUERY } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 's3' | 'config'>;
type LibraryRow = NonNullable<Awaited<ReturnType<typeof fileRepository.library>>>['data'][number];

const KIND_PREFIX = { image: 'image/', video: 'video/', audio: 'audio/', document: 'application/pdf' } as const;

const kindOf = (contentType: string) =>
  (Object.entries(KIND_PREFIX).find(([, prefix]) => contentType.startsWith(prefix))?.[0] ??
    'document') as keyof typeof KIND_PREFIX;

const field = (obj: unknown, name: string): unknown =>
  obj && typeof obj === 'object' ? (obj as Record<string, unknown>)[name] : undefined;
const text = (v: unknown) => (typeof v === 'string' ? v : null);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

async function outputObject(deps: Deps, f: LibraryRow, currency: string, projects: readonly string[]) {
  // Same-origin relative links: the dashboard may be opened by any host name (a proxy's, 127.0.0.1), and its CSP
  // allows previews from its own origin only.
  const link = await fileContentPath(deps.config.signingSecret, { fileId: f.id, workspaceId: f.workspaceId });
  const task = f.task;
  const parsed = task ? taskOutputSchema.safeParse(task.output) : null;
  const entry = parsed?.success && f.outputIndex !== null ? parsed.data.outputs[f.outputIndex] : undefined;
  const width = num(field(entry, 'width'));
  const height = num(field(entry, 'height'));
  return {
    id: f.id,
    kind: kindOf(f.contentType),
    content_type: f.contentType,
    bytes: Number(f.bytes),
    filename: f.filename,
    created_at: f.createdAt.toISOString(),
    source: f.source,
    model: task?.model ?? null,
    prompt: text(field(task?.input, 'prompt')),
    size: width !== null && height !== null ? `${width}x${height}` : text(field(task?.input, 'size')),
    duration: num(field(entry, 'duration')) ?? num(field(task?.input, 'duration_seconds')),
    cost: task?.cost != null ? { amount: toAmount(task.cost), currency } : null,
    task_id: task?.id ?? null,
    preview_url: link.path,
    download_url: link.path,
    public_copy_expires_at: f.publicExpiresAt?.toISOString() ?? null,
    expires_at: f.expiresAt?.toISOString() ?? null,
    projects: [...projects],
  };
}

/** GET …/outputs — newest first, filtered by source, kind, model and a date range (to inclusive), cursor paging. */
export function listOutputs(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(OUTPUTS_QUERY, req.query);
    if (q.from && q.to && q.to < q.from) throw errors.invalidRequest('to: must not be before from', 'to');
    res.json(
      await libraryPage(deps, memberOf(res).workspace, {
        source: q.source,
        limit: q.limit,
        ...(q.after ? { after: q.after } : {}),
        ...(q.kind ? { contentTypePrefix: KIND_PREFIX[q.kind] } : {}),
        ...(q.model ? { model: q.model } : {}),
        ...(q.from ? { from: q.from } : {}),
        ...(q.to ? { to: plusDays(q.to, 1) } : {}),
      }),
    );
  };
}

/** GET …/projects/:projectId/files — the project's files as the outputs grid shows them, newest first. */
export function listProjectFiles(deps: Deps) {
  return async (req: Request<{ projectId: string }>, res: Response) => {
    const q = parseFields(PROJECT_FILES_QUERY, req.query);
    const { workspace } = memberOf(res);
    const project = await findProject(deps.db, workspace.id, req.params.projectId);
    res.json(
      await libraryPage(deps, workspace, {
        projectId: project.id,
        limit: q.limit,
        ...(q.after ? { after: q.after } : {}),
      }),
    );
  };
}

async function libraryPage(deps: Deps, workspace: { id: string; currency: string }, query: LibraryQuery) {
  const page = await fileRepository.library(deps.db, workspace.id, query);
  if (!page) throw errors.invalidRequest(`after: no file ${query.after} in this workspace.`, 'after');
  const projects = await projectRepository.projectsOf(
    deps.db,
    page.data.map((f) => f.id),
  );
  const data = await Promise.all(
    page.data.map((f) => outputObject(deps, f, workspace.currency, projects.get(f.id) ?? [])),
  );
  return { data, has_more: page.hasMore, next_cursor: page.hasMore ? (data.at(-1)?.id ?? null) : null };
}

/** DELETE …/outputs/:fileId — admins and owners (the router checks the role). */
export function deleteOutput(deps: Deps) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const id = req.params.fileId;
    await removeFile(deps, memberOf(res).workspace.id, id, locals(res).log);
    res.json({ id, deleted: true });
  };
}

/**
 * DELETE …/outputs/:fileId/public-copy — admins and owners (the router checks the role) take a generated output's
 * public copy down while its row exists, whether or not its library entry has expired: row and bytes go, as the
 * retention sweep removes them (hide, bytes, row), so a crash or an S3 failure leaves what the sweep finishes, and a
 * retry completes it.
 */
export function takeDownPublicCopy(deps: Deps) {
  return async (req: Request<{ fileId: string }>, res: Response) => {
    const id = req.params.fileId;
    const workspaceId = memberOf(res).workspace.id;
    const marked = FILE_ID.test(id) ? await fileRepository.takeDownPublicCopy(deps.db, workspaceId, id) : null;
    if (!marked)
      throw errors.notFound(`No public copy of a file ${id.slice(0, 64)} in this workspace.`, { param: 'file_id' });
    await removeHiddenFile(deps, workspaceId, id, marked.storageKey, locals(res).log, 'The public copy is taken down');
    res.json({ id, object: 'public_copy', deleted: true });
  };
}
