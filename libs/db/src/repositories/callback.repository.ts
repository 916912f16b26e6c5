// Callback deliveries (spec §6, DESIGN.md §4): the workspace's signing secret, the log of every attempt, and the
// task's delivery state (none → pending → delivered | parked; a redelivery makes it pending again).
//
// Attempts are numbered from 1 per task and keep increasing across redeliveries; a round of five starts at
// Task.callbackRoundStart. An attempt's row is written once, when its outcome is known ((taskId, attempt) unique):
// a dispatcher that dies mid-attempt leaves no row, so the attempt is made again under the same number and the
// same delivery id.
import type { DbClient } from '../client';
import type { CallbackState } from '../generated/prisma/enums';
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

/** A recorded attempt, as much of it as deciding what follows needs. */
export interface RecordedAttempt {
  attempt: number;
  statusCode: number | null;
  /** When the attempt started. */
  createdAt: Date;
  durationMs: number | null;
}

/** What a delivery does after an attempt's outcome was applied. */
export type DeliveryStep =
  | { step: 'delivered' }
  | { step: 'parked' }
  /** Attempt `attempt` is due in `delayMs`: the caller adds its job. */
  | { step: 'retry'; attempt: number; delayMs: number }
  /** Nothing to do: no longer pending, or a redelivery started a newer round (whose first job its starter made). */
  | { step: 'none'; reason: 'not_pending' | 'superseded' };

/** A receiver's answer that delivers the callback: any 2xx. */
export const isDeliveredStatus = (status: number | null) => status !== null && status >= 200 && status < 300;

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

  /**
   * pending → delivered, for the round that `attempt` belongs to: a redelivery that started a new round meanwhile
   * (a higher round start) is not marked by an attempt of the old one.
   */
  async markDelivered(db: DbClient, taskId: string, attempt: number, at: Date): Promise<boolean> {
    const { count } = await db.task.updateMany({
      where: { id: taskId, callbackState: 'pending', callbackRoundStart: { lte: attempt } },
      data: { callbackState: 'delivered', deliveredAt: at, updatedAt: at },
    });
    return count === 1;
  },

  /** pending → parked (the fifth attempt of the round `attempt` belongs to failed). */
  async markParked(db: DbClient, taskId: string, attempt: number, now = new Date()): Promise<boolean> {
    const { count } = await db.task.updateMany({
      where: { id: taskId, callbackState: 'pending', callbackRoundStart: { lte: attempt } },
      data: { callbackState: 'parked', updatedAt: now },
    });
    return count === 1;
  },

  /** Records that a pending delivery moved (an attempt failed and the next is scheduled), for the reconciler. */
  async touchPending(db: DbClient, taskId: string, now = new Date()): Promise<void> {
    await db.task.updateMany({ where: { id: taskId, callbackState: 'pending' }, data: { updatedAt: now } });
  },

  /**
   * Applies a recorded attempt's outcome to the task's delivery, `task` being read after the attempt was recorded (a
   * redelivery may have started a new round while it was in flight). A 2xx marks it delivered, as of the attempt's
   * start (the delivered_at its envelope carried). A failure of a round's last attempt (a round is
   * `scheduleMs.length` attempts) parks it. Any other failure names the next attempt, due `scheduleMs[j]` after this
   * one ended (`endedAt`, by default its start plus its duration), for the caller to add as a job; counted from the
   * failure, so a re-applied outcome does not push it later. Every write is conditional, so applying one outcome
   * twice changes nothing: the dispatcher applies each attempt, and the reconciler re-applies the last one.
   */
  async applyAttempt(
    db: DbClient,
    task: { id: string; callbackState: CallbackState; callbackRoundStart: number },
    recorded: RecordedAttempt,
    scheduleMs: readonly number[],
    opts: { endedAt?: number; now?: Date } = {},
  ): Promise<DeliveryStep> {
    if (task.callbackState !== 'pending') return { step: 'none', reason: 'not_pending' };
    if (recorded.attempt < task.callbackRoundStart) return { step: 'none', reason: 'superseded' };
    const now = opts.now ?? new Date();
    if (isDeliveredStatus(recorded.statusCode)) {
      await callbackRepository.markDelivered(db, task.id, recorded.attempt, recorded.createdAt);
      return { step: 'delivered' };
    }
    const index = recorded.attempt - task.callbackRoundStart;
    if (index + 1 >= scheduleMs.length) {
      await callbackRepository.markParked(db, task.id, recorded.attempt, now);
      return { step: 'parked' };
    }
    const endedAt = opts.endedAt ?? recorded.createdAt.getTime() + (recorded.durationMs ?? 0);
    const delayMs = Math.max(0, endedAt + scheduleMs[index + 1]! - now.getTime());
    // Moved, for the reconciler: a pending delivery that stops moving has lost its next job.
    await callbackRepository.touchPending(db, task.id, now);
    return { step: 'retry', attempt: recorded.attempt + 1, delayMs };
  },

  /**
   * Starts a new round of five attempts for a finished task with a callback_url, delivered, parked or pending.
   * Returns the round's first attempt number, or null when the task is not finished or has no callback_url.
   */
  async redeliver(db: DbClient, workspaceId: string, taskId: string, now = new Date()): Promise<{ attempt: number } | null> {
    const rows = await db.$queryRaw<{ callbackRoundStart: number }[]>`
      UPDATE "Task" t SET "callbackState" = 'pending', "updatedAt" = ${now}::timestamp(3),
        "callbackRoundStart" = coalesce((SELECT max(attempt) FROM "CallbackAttempt" a WHERE a."taskId" = t.id), 0) + 1
      WHERE t.id = ${taskId} AND t."workspaceId" = ${workspaceId} AND t."callbackUrl" IS NOT NULL
        AND t.status IN ('completed', 'failed', 'canceled')
      RETURNING t."callbackRoundStart"`;
    return rows[0] ? { attempt: rows[0].callbackRoundStart } : null;
  },

  /** Tasks whose delivery is pending and has not moved since `before` (their job may have vanished). */
  pendingSince(db: DbClient, before: Date, limit: number) {
    return db.task.findMany({
      where: { callbackState: 'pending', updatedAt: { lt: before } },
      select: { id: true, workspaceId: true, callbackState: true, callbackRoundStart: true },
      orderBy: { updatedAt: 'asc' },
      take: limit,
    });
  },
};
