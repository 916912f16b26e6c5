import type { DbClient } from '../client';
import { withTx } from '../client';
import type { Prisma } from '../generated/prisma/client';
import { LIBRARY_RETENTION_DAYS, RELEASE_GRACE_DAYS, UPLOAD_RETENTION_DAYS } from '../retention';
import { isVisibleSql } from './file.repository';

// Saved projects: named sets of a workspace's files. A file attached to at least one project has no expiry
// (File.expiresAt NULL: visible, never taken by the retention sweep); when its last project lets it go, its normal
// retention applies again, and one already past it gets RELEASE_GRACE_DAYS from that moment.
//
// Every change that attaches or releases a file locks the file's row first, and so does the sweep before it removes
// bytes: an attach and a release of one file, or an attach and a purge, never interleave. The limits are counted
// under a lock too (the project row for its files, a per-workspace advisory lock for its projects), so concurrent
// requests cannot pass a limit together.

export const MAX_PROJECTS_PER_WORKSPACE = 1_000;
export const MAX_PROJECT_NAME_LENGTH = 100;
export const MAX_FILES_PER_PROJECT = 10_000;

export interface ListProjectsInput {
  limit: number;
  /** Id of the last project of the previous page. */
  after?: string;
  order: 'asc' | 'desc';
}

export type AttachResult = 'attached' | 'already_attached' | 'no_project' | 'no_file' | 'project_full';
export type CreateProjectResult = { ok: true; project: ProjectRow } | { ok: false; reason: 'workspace_full' };

const projectFields = {
  id: true,
  workspaceId: true,
  name: true,
  description: true,
  createdAt: true,
  createdBy: { select: { id: true, email: true, name: true } },
  _count: { select: { files: true } },
} as const;

type ProjectRecord = Prisma.ProjectGetPayload<{ select: typeof projectFields }>;

export interface ProjectRow {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  createdAt: Date;
  createdBy: { id: string; email: string; name: string | null } | null;
  fileCount: number;
}

const rowOf = ({ _count, ...p }: ProjectRecord): ProjectRow => ({ ...p, fileCount: _count.files });

async function lockProject(tx: DbClient, workspaceId: string, id: string): Promise<boolean> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Project" WHERE id = ${id} AND "workspaceId" = ${workspaceId} FOR UPDATE`;
  return rows.length === 1;
}

/**
 * Gives the files no project holds any more their retention back: the normal expiry (uploads 30 days from creation;
 * outputs 30 days or their public copy's end, whichever is first), or RELEASE_GRACE_DAYS from `now` when that is
 * sooner. Their rows are locked first, so an attach of one of them to another project is either seen or waits.
 */
async function release(tx: DbClient, fileIds: string[], now: Date): Promise<void> {
  if (fileIds.length === 0) return;
  const sorted = [...fileIds].sort();
  await tx.$queryRaw`SELECT id FROM "File" WHERE id = ANY(${sorted}) ORDER BY id FOR UPDATE`;
  // A statement of its own after the locks: its snapshot sees every attachment committed before them.
  await tx.$executeRaw`
    UPDATE "File" f SET "expiresAt" = GREATEST(
      CASE WHEN f."publicExpiresAt" IS NULL
        THEN f."createdAt" + make_interval(days => ${UPLOAD_RETENTION_DAYS})
        ELSE LEAST(f."createdAt" + make_interval(days => ${LIBRARY_RETENTION_DAYS}), f."publicExpiresAt") END,
      ${now}::timestamp(3) + make_interval(days => ${RELEASE_GRACE_DAYS}))
    WHERE f.id = ANY(${sorted}) AND f."expiresAt" IS NULL
      AND NOT EXISTS (SELECT 1 FROM "ProjectFile" pf WHERE pf."fileId" = f.id)`;
}

export const projectRepository = {
  /** A new project, unless the workspace already has MAX_PROJECTS_PER_WORKSPACE. */
  create(
    db: DbClient,
    input: { id: string; workspaceId: string; name: string; description: string; createdById: string | null },
  ): Promise<CreateProjectResult> {
    return withTx(db, async (tx) => {
      // An advisory lock, not the workspace row's: that row carries the balance every paid call updates.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`projects:${input.workspaceId}`}, 0))`;
      const count = await tx.project.count({ where: { workspaceId: input.workspaceId } });
      if (count >= MAX_PROJECTS_PER_WORKSPACE) return { ok: false, reason: 'workspace_full' } as const;
      const project = await tx.project.create({ data: input, select: projectFields });
      return { ok: true, project: rowOf(project) } as const;
    });
  },

  async get(db: DbClient, workspaceId: string, id: string): Promise<ProjectRow | null> {
    const p = await db.project.findUnique({ where: { id }, select: projectFields });
    return p && p.workspaceId === workspaceId ? rowOf(p) : null;
  },

  /** One page in (createdAt, id) order; null when `after` names no project of this workspace. */
  async list(db: DbClient, workspaceId: string, input: ListProjectsInput) {
    const where: Prisma.ProjectWhereInput = { workspaceId };
    if (input.after !== undefined) {
      const cursor = await db.project.findUnique({
        where: { id: input.after },
        select: { workspaceId: true, createdAt: true, id: true },
      });
      if (!cursor || cursor.workspaceId !== workspaceId) return null;
      const beyond = input.order === 'desc' ? 'lt' : 'gt';
      where.OR = [
        { createdAt: { [beyond]: cursor.createdAt } },
        { createdAt: cursor.createdAt, id: { [beyond]: cursor.id } },
      ];
    }
    const rows = await db.project.findMany({
      where,
      select: projectFields,
      orderBy: [{ createdAt: input.order }, { id: input.order }],
      take: input.limit + 1,
    });
    return { data: rows.slice(0, input.limit).map(rowOf), hasMore: rows.length > input.limit };
  },

  async update(
    db: DbClient,
    workspaceId: string,
    id: string,
    patch: { name?: string; description?: string },
  ): Promise<ProjectRow | null> {
    const { count } = await db.project.updateMany({ where: { id, workspaceId }, data: patch });
    return count === 1 ? projectRepository.get(db, workspaceId, id) : null;
  },

  /** Deletes the project, never a file: the files it alone held get their retention back. False when none. */
  delete(db: DbClient, workspaceId: string, id: string, now = new Date()): Promise<boolean> {
    return withTx(db, async (tx) => {
      if (!(await lockProject(tx, workspaceId, id))) return false;
      const held = await tx.projectFile.findMany({ where: { projectId: id }, select: { fileId: true } });
      await tx.project.delete({ where: { id } });
      await release(
        tx,
        held.map((h) => h.fileId),
        now,
      );
      return true;
    });
  },

  /**
   * Attaches a visible file of the workspace to its project; a file already attached stays as it is. The project
   * row's lock serialises attaches to one project, so its MAX_FILES_PER_PROJECT holds under concurrency.
   */
  attach(db: DbClient, workspaceId: string, projectId: string, fileId: string, now = new Date()) {
    return withTx(db, async (tx): Promise<AttachResult> => {
      if (!(await lockProject(tx, workspaceId, projectId))) return 'no_project';
      const file = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM "File" WHERE id = ${fileId} AND "workspaceId" = ${workspaceId} AND ${isVisibleSql(now)}
        FOR UPDATE`;
      if (file.length === 0) return 'no_file';
      const existing = await tx.projectFile.findUnique({ where: { projectId_fileId: { projectId, fileId } } });
      if (existing) return 'already_attached';
      if ((await tx.projectFile.count({ where: { projectId } })) >= MAX_FILES_PER_PROJECT) return 'project_full';
      await tx.projectFile.create({ data: { projectId, fileId, addedAt: now } });
      await tx.file.update({ where: { id: fileId }, data: { expiresAt: null } });
      return 'attached';
    });
  },

  /**
   * Detaches a visible file; if no other project holds it, its retention runs again. A file being deleted is not
   * attached any more, as far as callers can tell.
   */
  detach(db: DbClient, workspaceId: string, projectId: string, fileId: string, now = new Date()) {
    return withTx(db, async (tx): Promise<'detached' | 'no_project' | 'not_attached'> => {
      const project = await tx.project.findUnique({ where: { id: projectId }, select: { workspaceId: true } });
      if (!project || project.workspaceId !== workspaceId) return 'no_project';
      const file = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM "File" WHERE id = ${fileId} AND ${isVisibleSql(now)} FOR UPDATE`;
      if (file.length === 0) return 'not_attached';
      const { count } = await tx.projectFile.deleteMany({ where: { projectId, fileId } });
      if (count === 0) return 'not_attached';
      await release(tx, [fileId], now);
      return 'detached';
    });
  },

  /** The projects each file is attached to, by file id (files with none are absent). */
  async projectsOf(db: DbClient, fileIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (fileIds.length === 0) return out;
    const rows = await db.projectFile.findMany({
      where: { fileId: { in: [...fileIds] } },
      select: { fileId: true, projectId: true },
      orderBy: [{ addedAt: 'asc' }, { projectId: 'asc' }],
    });
    for (const r of rows) out.set(r.fileId, [...(out.get(r.fileId) ?? []), r.projectId]);
    return out;
  },
};
