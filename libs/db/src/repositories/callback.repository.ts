// Callback deliveries (spec §6, DESIGN.md §4): the workspace's signing secret and the log of every attempt. The
// task's delivery state (none → pending → delivered | parked) is a Task column: taskRepository writes it.
//
// Attempts are numbered from 1 per task and keep increasing across redeliveries; a round of five starts at
// Task.callbackRoundStart. An attempt's row is written once, when its outcome is known ((taskId, attempt) unique):
// a dispatcher that dies mid-attempt leaves no row, so the attempt is made again under the same number and the
// same delivery id.
import type { DbClient } from '../client';
import type { Task } from '../generated/prisma/client';
import { isArchivedOutputOf } from './file.repository';

/** After a rotation the previous secret still signs for this long (DESIGN.md §4). */
export const CALLBACK_SECRET_OVERLAP_MS = 24 * 3600 * 1000;

export interface CallbackSecretView {
  secret: string;
  /** Still used to sign until previousExpiresAt. */
  previousSecret: string | null;
  previousExpiresAt: Date | null;
  rotatedAt: Date | null;
  createdAt: Date;
}

export interface RecordAttemptInput {
  workspaceId: string;
  taskId: string;
  attempt: number;
  deliveryId: string;
  url: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The start of the response body. */
  responseHead: string | null;
  at: Date;
}

const view = (row: CallbackSecretView, now: Date): CallbackSecretView =>
  row.previousExpiresAt && row.previousExpiresAt > now ? row : { ...row, previousSecret: null, previousExpiresAt: null };

const signingOf = (s: CallbackSecretView) => (s.previousSecret ? [s.secret, s.previousSecret] : [s.secret]);

/** A recorded attempt, as much of it as deciding what follows needs. */
export interface LastAttempt {
  attempt: number;
  statusCode: number | null;
  createdAt: Date;
  durationMs: number | null;
}

/** What one delivery attempt reads before it sends (callbackRepository.attemptContext). */
export interface AttemptContext {
  task: Task;
  /** The task's last recorded attempt, or null. */
  last: LastAttempt | null;
  /** The workspace's currency; null when the workspace is gone (its tasks go with it). */
  currency: string | null;
  /** The secrets to sign with now; null before the workspace's first delivery (callbackRepository.signingSecrets makes it). */
  signing: string[] | null;
  /** The visible library file of the task's archived first output (isArchivedOutputOf), or null. */
  archivedFile: { id: string; workspaceId: string } | null;
}

export const callbackRepository = {
  /** Tasks whose delivery is parked (five failed attempts in a round): a gauge for operators. */
  countParked(db: DbClient): Promise<number> {
    return db.task.count({ where: { callbackState: 'parked' } });
  },

  /** The workspace's secret, made on first use with `make` (racing first uses agree on one). */
  async secret(db: DbClient, workspaceId: string, make: () => string, now = new Date()): Promise<CallbackSecretView> {
    const existing = await db.callbackSecret.findUnique({ where: { workspaceId } });
    if (existing) return view(existing, now);
    // First use. When a racing first use inserted meanwhile, the no-op update returns its row, not ours.
    const rows = await db.$queryRaw<CallbackSecretView[]>`
      INSERT INTO "CallbackSecret" ("workspaceId", secret, "createdAt") VALUES (${workspaceId}, ${make()}, ${now}::timestamp(3))
      ON CONFLICT ("workspaceId") DO UPDATE SET "workspaceId" = EXCLUDED."workspaceId"
      RETURNING secret, "previousSecret", "previousExpiresAt", "rotatedAt", "createdAt"`;
    return view(rows[0]!, now);
  },

  /** Replaces the secret; the old one keeps signing for 24 h. One statement, so racing rotations chain cleanly. */
  async rotate(db: DbClient, workspaceId: string, make: () => string, now = new Date()): Promise<CallbackSecretView> {
    const overlapEnd = new Date(now.getTime() + CALLBACK_SECRET_OVERLAP_MS);
    const rows = await db.$queryRaw<CallbackSecretView[]>`
      INSERT INTO "CallbackSecret" ("workspaceId", secret, "createdAt", "rotatedAt") VALUES (${workspaceId}, ${make()}, ${now}::timestamp(3), ${now}::timestamp(3))
      ON CONFLICT ("workspaceId") DO UPDATE SET
        "previousSecret" = "CallbackSecret".secret, "previousExpiresAt" = ${overlapEnd}::timestamp(3),
        secret = EXCLUDED.secret, "rotatedAt" = EXCLUDED."rotatedAt"
      RETURNING secret, "previousSecret", "previousExpiresAt", "rotatedAt", "createdAt"`;
    return view(rows[0]!, now);
  },

  /** The secrets a delivery is signed with now: the current one, and the previous one during the overlap. */
  async signingSecrets(db: DbClient, workspaceId: string, make: () => string, now = new Date()): Promise<string[]> {
    return signingOf(await callbackRepository.secret(db, workspaceId, make, now));
  },

  /**
   * Everything a delivery attempt reads, in one statement (issue 12: an attempt's store round trips were its cost):
   * the task, its last recorded attempt, the workspace's currency and signing secrets, and the library file of its
   * first output. The file is read by (task, output 0) and kept only when it is the very file the output entry names,
   * of the task's workspace and still visible at `now` (isArchivedOutputOf). Null when
   * there is no such task.
   */
  async attemptContext(db: DbClient, taskId: string, now = new Date()): Promise<AttemptContext | null> {
    const rows = await db.$queryRaw<
      (Task & {
        ctx_currency: string | null;
        ctx_secret: string | null;
        ctx_previousSecret: string | null;
        ctx_previousExpiresAt: Date | null;
        ctx_lastAttempt: number | null;
        ctx_lastStatus: number | null;
        ctx_lastAt: Date | null;
        ctx_lastDuration: number | null;
        ctx_fileId: string | null;
        ctx_fileWorkspaceId: string | null;
        ctx_fileExpiresAt: Date | null;
      })[]
    >`
      SELECT t.*, w.currency AS "ctx_currency",
        s.secret AS "ctx_secret", s."previousSecret" AS "ctx_previousSecret", s."previousExpiresAt" AS "ctx_previousExpiresAt",
        a.attempt AS "ctx_lastAttempt", a."statusCode" AS "ctx_lastStatus", a."createdAt" AS "ctx_lastAt", a."durationMs" AS "ctx_lastDuration",
        f.id AS "ctx_fileId", f."workspaceId" AS "ctx_fileWorkspaceId", f."expiresAt" AS "ctx_fileExpiresAt"
      FROM "Task" t
      LEFT JOIN "Workspace" w ON w.id = t."workspaceId"
      LEFT JOIN "CallbackSecret" s ON s."workspaceId" = t."workspaceId"
      LEFT JOIN LATERAL (
        SELECT attempt, "statusCode", "createdAt", "durationMs" FROM "CallbackAttempt" WHERE "taskId" = t.id ORDER BY attempt DESC LIMIT 1
      ) a ON true
      LEFT JOIN "File" f ON f."taskId" = t.id AND f."outputIndex" = 0
      WHERE t.id = ${taskId}`;
    const row = rows[0];
    if (!row) return null;
    const {
      ctx_currency: currency,
      ctx_secret: secret,
      ctx_previousSecret: previousSecret,
      ctx_previousExpiresAt: previousExpiresAt,
      ctx_lastAttempt: lastAttempt,
      ctx_lastStatus: statusCode,
      ctx_lastAt: lastAt,
      ctx_lastDuration: durationMs,
      ctx_fileId: fileId,
      ctx_fileWorkspaceId: fileWorkspaceId,
      ctx_fileExpiresAt: fileExpiresAt,
      ...task
    } = row;
    const signing =
      secret === null ? null : signingOf(view({ secret, previousSecret, previousExpiresAt, rotatedAt: null, createdAt: now }, now));
    const archived = fileId !== null && isArchivedOutputOf(task, { id: fileId, workspaceId: fileWorkspaceId!, expiresAt: fileExpiresAt }, now);
    return {
      task,
      last: lastAttempt === null ? null : { attempt: lastAttempt, statusCode, createdAt: lastAt!, durationMs },
      currency,
      signing,
      archivedFile: archived ? { id: fileId, workspaceId: task.workspaceId } : null,
    };
  },

  attempts(db: DbClient, taskId: string) {
    return db.callbackAttempt.findMany({ where: { taskId }, orderBy: { attempt: 'asc' } });
  },

  /** The last recorded attempt of the task, or null. */
  lastAttempt(db: DbClient, taskId: string) {
    return db.callbackAttempt.findFirst({ where: { taskId }, orderBy: { attempt: 'desc' } });
  },
};
