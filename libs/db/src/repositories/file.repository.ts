import type { DbClient } from '../client';
import type { ArchiveStatus, FileSource, Tier } from '../generated/prisma/enums';
import { Prisma } from '../generated/prisma/client';
import { archivedFileIdOf } from '@gensvc/contracts';
import { generatedExpiry } from '../retention';

// A file is visible (listed, inspected, served) while its library entry lives: expiresAt > now, or null while a saved
// project keeps it (project.repository). Expiry is therefore also the mark of a deletion in progress: a delete first
// expires the row, then removes the bytes, then the row, so a crash at any point leaves a hidden row that the
// retention sweep finishes, never a listed row without bytes.

export interface CreateFileInput {
  id: string;
  workspaceId: string;
  source: FileSource;
  purpose: string;
  filename: string;
  contentType: string;
  bytes: bigint;
  sha256?: string | null;
  storageKey: string;
  createdAt?: Date;
  expiresAt: Date;
  publicExpiresAt?: Date | null;
  taskId?: string | null;
  outputIndex?: number | null;
  archiveStatus?: ArchiveStatus;
  createdById?: string | null;
}

/** A generated output stored in S3 at its derived location (storage generatedOutputLocation). */
export interface GeneratedFileInput {
  location: { fileId: string; storageKey: string };
  workspace: { id: string; tier: Tier; retentionDays: number | null };
  taskId: string;
  outputIndex: number;
  /** Decided from the bytes: the content type and the usual extension. */
  media: { contentType: string; extension: string };
  bytes: number;
  sha256: string;
  createdAt: Date;
}

/**
 * The library row of a generated output: the one place it is built (the archiver's copies and the edge's stored
 * edits alike), with its two lives from the workspace's tier (retention.ts).
 */
export function generatedFile(
  input: GeneratedFileInput,
): CreateFileInput & { taskId: string; outputIndex: number; sha256: string } {
  const expiry = generatedExpiry(input.createdAt, input.workspace.tier, input.workspace.retentionDays);
  return {
    id: input.location.fileId,
    workspaceId: input.workspace.id,
    source: 'generated',
    purpose: 'output',
    filename: `${input.taskId}-${input.outputIndex}.${input.media.extension}`,
    contentType: input.media.contentType,
    bytes: BigInt(input.bytes),
    sha256: input.sha256,
    storageKey: input.location.storageKey,
    createdAt: input.createdAt,
    expiresAt: expiry.expiresAt,
    publicExpiresAt: expiry.publicExpiresAt,
    taskId: input.taskId,
    outputIndex: input.outputIndex,
    archiveStatus: 'archived',
  };
}

export interface ListFilesInput {
  limit: number;
  /** Id of the last file of the previous page. */
  after?: string;
  order: 'asc' | 'desc';
  purpose?: string;
  source?: FileSource;
  /** Only the files attached to this project (its workspace's, checked by the caller). */
  projectId?: string;
}

export interface LibraryQuery {
  /** Absent: both sources (a project's files). */
  source?: FileSource;
  /** Only the files attached to this project (its workspace's, checked by the caller). */
  projectId?: string;
  limit: number;
  after?: string;
  /** "image/", "video/", "audio/", "application/pdf". */
  contentTypePrefix?: string;
  model?: string;
  from?: Date;
  to?: Date;
}

export interface PurgeableFile {
  id: string;
  workspaceId: string;
  storageKey: string;
}

export const visibleFile = (now: Date): Prisma.FileWhereInput => ({
  OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
});

/** The same rule on a "File" row in SQL, for the raw statements below and project.repository's. */
export const isVisibleSql = (now: Date) => Prisma.sql`("expiresAt" IS NULL OR "expiresAt" > ${now}::timestamp(3))`;

/** Both lives over: the library entry and, for generated outputs, the public copy. */
const purgeable = (now: Date): Prisma.FileWhereInput => ({
  expiresAt: { lte: now },
  OR: [{ publicExpiresAt: null }, { publicExpiresAt: { lte: now } }],
});

export const fileRepository = {
  create(db: DbClient, input: CreateFileInput) {
    return db.file.create({
      data: {
        id: input.id,
        workspaceId: input.workspaceId,
        source: input.source,
        purpose: input.purpose,
        filename: input.filename,
        contentType: input.contentType,
        bytes: input.bytes,
        sha256: input.sha256 ?? null,
        storageKey: input.storageKey,
        ...(input.createdAt ? { createdAt: input.createdAt } : {}),
        expiresAt: input.expiresAt,
        publicExpiresAt: input.publicExpiresAt ?? null,
        taskId: input.taskId ?? null,
        outputIndex: input.outputIndex ?? null,
        ...(input.archiveStatus ? { archiveStatus: input.archiveStatus } : {}),
        createdById: input.createdById ?? null,
      },
    });
  },

  /** The workspace's visible file; null for another workspace's, an expired or a deleted one. */
  async get(db: DbClient, workspaceId: string, id: string, now = new Date()) {
    // findUnique on the primary key (its plan is cached, see client.ts), then the workspace and expiry checks.
    const file = await db.file.findUnique({ where: { id } });
    return file && file.workspaceId === workspaceId && isVisible(file, now) ? file : null;
  },

  /**
   * One page in (createdAt, id) order. `after` must name a file of this workspace (an expired one still counts as
   * a position while its row exists); null when it does not.
   */
  async list(db: DbClient, workspaceId: string, input: ListFilesInput, now = new Date()) {
    const where: Prisma.FileWhereInput = {
      workspaceId,
      ...visibleFile(now),
      ...(input.purpose !== undefined ? { purpose: input.purpose } : {}),
      ...(input.source !== undefined ? { source: input.source } : {}),
      ...(input.projectId !== undefined ? { projects: { some: { projectId: input.projectId } } } : {}),
    };
    if (input.after !== undefined) {
      const cursor = await db.file.findUnique({
        where: { id: input.after },
        select: { workspaceId: true, createdAt: true, id: true },
      });
      if (!cursor || cursor.workspaceId !== workspaceId) return null;
      const beyond = input.order === 'desc' ? 'lt' : 'gt';
      where.AND = [
        {
          OR: [
            { createdAt: { [beyond]: cursor.createdAt } },
            { createdAt: cursor.createdAt, id: { [beyond]: cursor.id } },
          ],
        },
      ];
    }
    const rows = await db.file.findMany({
      where,
      orderBy: [{ createdAt: input.order }, { id: input.order }],
      take: input.limit + 1,
    });
    return { data: rows.slice(0, input.limit), hasMore: rows.length > input.limit };
  },

  /**
   * The dashboard's library: visible files newest first, filtered by source, media kind (content-type family),
   * the producing task's model and a creation-time range, each with the task that made it. `after` is the last file
   * id of the previous page; null when it names no file of this workspace.
   */
  async library(db: DbClient, workspaceId: string, input: LibraryQuery, now = new Date()) {
    const where: Prisma.FileWhereInput = {
      workspaceId,
      ...visibleFile(now),
      ...(input.source !== undefined ? { source: input.source } : {}),
      ...(input.projectId !== undefined ? { projects: { some: { projectId: input.projectId } } } : {}),
      ...(input.contentTypePrefix !== undefined ? { contentType: { startsWith: input.contentTypePrefix } } : {}),
      ...(input.model !== undefined ? { task: { model: input.model } } : {}),
      ...(input.from !== undefined || input.to !== undefined
        ? { createdAt: { ...(input.from ? { gte: input.from } : {}), ...(input.to ? { lt: input.to } : {}) } }
        : {}),
    };
    if (input.after !== undefined) {
      const cursor = await db.file.findUnique({
        where: { id: input.after },
        select: { workspaceId: true, createdAt: true, id: true },
      });
      if (!cursor || cursor.workspaceId !== workspaceId) return null;
      where.AND = [
        { OR: [{ createdAt: { lt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { lt: cursor.id } }] },
      ];
    }
    const rows = await db.file.findMany({
      where,
      include: { task: { select: { id: true, model: true, operation: true, input: true, output: true, cost: true } } },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: input.limit + 1,
    });
    return { data: rows.slice(0, input.limit), hasMore: rows.length > input.limit };
  },

  /**
   * Step one of a delete: hides the file at once (expires both of its lives). Returns its storage key, or null when
   * there is no visible file of this workspace by that id (so of two racing deletes, one wins).
   */
  async markDeleted(
    db: DbClient,
    workspaceId: string,
    id: string,
    now = new Date(),
  ): Promise<{ storageKey: string } | null> {
    // One conditional update: an upload keeps its null public expiry (it has no public copy).
    const rows = await db.$queryRaw<{ storageKey: string }[]>`
      UPDATE "File" SET
        "expiresAt" = ${now}::timestamp(3),
        "publicExpiresAt" = CASE WHEN "publicExpiresAt" IS NULL THEN NULL ELSE ${now}::timestamp(3) END
      WHERE id = ${id} AND "workspaceId" = ${workspaceId} AND ${isVisibleSql(now)}
      RETURNING "storageKey"`;
    return rows[0] ?? null;
  },

  /**
   * Step one of taking down a generated output's public copy, for as long as its row exists (the library entry may
   * have expired while the public copy lives): ends both lives at once, so the row is hidden and purgeable, and a
   * crash before the bytes and the row are removed leaves what the retention sweep finishes. A row already taken
   * down (a retry) keeps its earlier times. Null when the workspace has no generated output by that id.
   */
  async takeDownPublicCopy(
    db: DbClient,
    workspaceId: string,
    id: string,
    now = new Date(),
  ): Promise<{ storageKey: string } | null> {
    const rows = await db.$queryRaw<{ storageKey: string }[]>`
      UPDATE "File" SET
        "expiresAt" = LEAST("expiresAt", ${now}::timestamp(3)),
        "publicExpiresAt" = LEAST("publicExpiresAt", ${now}::timestamp(3))
      WHERE id = ${id} AND "workspaceId" = ${workspaceId} AND source = 'generated' AND "publicExpiresAt" IS NOT NULL
      RETURNING "storageKey"`;
    return rows[0] ?? null;
  },

  /** Last step of a delete, once the bytes are gone. */
  async remove(db: DbClient, workspaceId: string, id: string): Promise<boolean> {
    const { count } = await db.file.deleteMany({ where: { id, workspaceId } });
    return count === 1;
  },

  /** Files whose library entry and public copy are both over, oldest first (retention sweep, across workspaces). */
  purgeable(db: DbClient, now: Date, limit: number): Promise<PurgeableFile[]> {
    return db.file.findMany({
      where: purgeable(now),
      select: { id: true, workspaceId: true, storageKey: true },
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
      take: limit,
    });
  },

  /**
   * Visible files whose public copy is over while their bytes are still under `publicPrefix`: generated outputs a
   * saved project keeps (or kept, and whose grace runs) past their tier's public retention.
   */
  publicCopiesOver(db: DbClient, now: Date, publicPrefix: string, limit: number): Promise<PurgeableFile[]> {
    return db.file.findMany({
      where: { ...visibleFile(now), publicExpiresAt: { lte: now }, storageKey: { startsWith: publicPrefix } },
      select: { id: true, workspaceId: true, storageKey: true },
      orderBy: { id: 'asc' },
      take: limit,
    });
  },

  /**
   * Moves a file's bytes to `to` under its row's lock (a delete or a purge waits, then removes the new key), and points
   * the row there. False when the row is gone, locked, or no longer at `from`. A crash leaves the row at `from`; the
   * next run repeats the move, which moveObject makes safe.
   */
  relocate(
    db: DbClient,
    file: PurgeableFile,
    to: string,
    move: () => Promise<void>,
    timeoutMs = 60_000,
  ): Promise<boolean> {
    const run = async (tx: Prisma.TransactionClient) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM "File" WHERE id = ${file.id} AND "storageKey" = ${file.storageKey} FOR UPDATE SKIP LOCKED`;
      if (locked.length === 0) return false;
      await move();
      await tx.file.update({ where: { id: file.id }, data: { storageKey: to } });
      return true;
    };
    return '$transaction' in db ? db.$transaction(run, { maxWait: 10_000, timeout: timeoutMs }) : run(db);
  },

  /**
   * The sweep's removal of files it read as purgeable: locks those rows that still are (a file attached to a project
   * since the read is not, and a row locked by an attach in progress is skipped), lets `removeBytes` delete their
   * objects while the locks hold, and deletes the rows whose bytes it reports gone, in the same transaction. An
   * attach waits for the locks and then finds no file; a crash or timeout leaves hidden rows for the next run.
   */
  purge(
    db: DbClient,
    ids: readonly string[],
    now: Date,
    removeBytes: (files: PurgeableFile[]) => Promise<string[]>,
    timeoutMs = 120_000,
  ): Promise<{ taken: number; removed: number }> {
    const run = async (tx: Prisma.TransactionClient) => {
      const files = await tx.$queryRaw<PurgeableFile[]>`
        SELECT id, "workspaceId", "storageKey" FROM "File"
        WHERE id = ANY(${[...ids]}) AND "expiresAt" <= ${now}::timestamp(3)
          AND ("publicExpiresAt" IS NULL OR "publicExpiresAt" <= ${now}::timestamp(3))
        ORDER BY id FOR UPDATE SKIP LOCKED`;
      const gone = files.length ? await removeBytes(files) : [];
      const { count } = gone.length ? await tx.file.deleteMany({ where: { id: { in: gone } } }) : { count: 0 };
      return { taken: files.length, removed: count };
    };
    // Object deletions run inside: the transaction's time is theirs, bounded so a hung store gives the locks back.
    return '$transaction' in db ? db.$transaction(run, { maxWait: 10_000, timeout: timeoutMs }) : run(db);
  },
};

export type FileRow = NonNullable<Awaited<ReturnType<typeof fileRepository.get>>>;

/**
 * Whether `file` is the task's archived output a link may point at (spec §2.4): the very file its first output entry
 * names, of the task's workspace, and still visible at `now` (not expired, not deleted: a deleted one is not read).
 */
export function isArchivedOutputOf(
  task: { workspaceId: string; output: unknown },
  file: { id: string; workspaceId: string; expiresAt: Date | null },
  now: Date,
): boolean {
  return file.id === archivedFileIdOf(task.output) && file.workspaceId === task.workspaceId && isVisible(file, now);
}

/** Whether a file row is visible at `now` (visibleFile's rule on a row read). */
export const isVisible = (file: { expiresAt: Date | null }, now: Date): boolean =>
  file.expiresAt === null || file.expiresAt > now;
