// Callback deliveries (spec §6, DESIGN.md §4): the workspace's signing secret and the log of every attempt. The
// task's delivery state (none → pending → delivered | parked) is a Task column: taskRepository writes it.
//
// Attempts are numbered from 1 per task and keep increasing across redeliveries; a round of five starts at
// Task.callbackRoundStart. An attempt's row is written once, when its outcome is known ((taskId, attempt) unique):
// a dispatcher that dies mid-attempt leaves no row, so the attempt is made again under the same number and the
// same delivery id.
import type { DbClient } from '../client';
import { newId } from '../ids';

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
    const s = await callbackRepository.secret(db, workspaceId, make, now);
    return s.previousSecret ? [s.secret, s.previousSecret] : [s.secret];
  },

  /** Writes an attempt's outcome; false when that attempt was already recorded (a re-run of the same job). */
  async recordAttempt(db: DbClient, input: RecordAttemptInput): Promise<boolean> {
    const count = await db.$executeRaw`
      INSERT INTO "CallbackAttempt" (id, "workspaceId", "taskId", attempt, "deliveryId", url, "statusCode", "durationMs", error, "responseHead", "createdAt")
      VALUES (${newId('cba')}, ${input.workspaceId}, ${input.taskId}, ${input.attempt}, ${input.deliveryId}, ${input.url}, ${input.statusCode},
              ${input.durationMs}, ${input.error}, ${input.responseHead}, ${input.at}::timestamp(3))
      ON CONFLICT DO NOTHING`;
    return count === 1;
  },

  attempts(db: DbClient, taskId: string) {
    return db.callbackAttempt.findMany({ where: { taskId }, orderBy: { attempt: 'asc' } });
  },

  /** The last recorded attempt of the task, or null. */
  lastAttempt(db: DbClient, taskId: string) {
    return db.callbackAttempt.findFirst({ where: { taskId }, orderBy: { attempt: 'desc' } });
  },
};
