// Generation tasks (DESIGN.md §4): queued → running → completed | failed, and queued | running → canceled.
//
// Every transition is one conditional UPDATE on the task row, so racing writers (a cancel and the provider's
// success, two archive jobs, a re-run job and the reconciler) serialise on the row lock and exactly one wins. The
// money moves in the same transaction as the transition that decides it: the success that records the output
// settles the hold, the failure or cancel that ends the task releases it; settle and release are themselves
// idempotent, so no task is ever charged twice or charged and failed.
//
// Raw updates set "updatedAt" themselves (Prisma's @updatedAt applies to its own writes only): the reconciler reads
// it as the time the task last moved.
import type { DbClient } from '../client';
import { withTx } from '../client';
import type { Prisma, Task } from '../generated/prisma/client';
import type { TaskStatus } from '../generated/prisma/enums';
import { billingRepository } from './billing.repository';
import { fileRepository } from './file.repository';

export interface CreateTaskInput {
  id: string;
  workspaceId: string;
  apiKeyId: string;
  requestId: string;
  model: string;
  operation: string;
  input: Prisma.InputJsonValue;
  callbackUrl: string | null;
  /** The price, held now and settled on completion. */
  amount: bigint;
  deadlineAt: Date;
}

export interface ListTasksInput {
  limit: number;
  /** Id of the last task of the previous page. */
  after?: string;
  order: 'asc' | 'desc';
  status?: TaskStatus;
}

export interface SubmittedJob {
  channelId: string;
  upstreamId: string;
  /** Whatever later calls need besides the id (status/result/cancel URLs). */
  upstreamUrls: Prisma.InputJsonValue | null;
}

/** What the job that delivers a just-completed task's callback needs. */
export interface CompletedTask {
  id: string;
  workspaceId: string;
  /** The first attempt of the delivery round. */
  callbackRoundStart: number;
  /** A callback_url is set: the delivery is pending and its first attempt is due. */
  callback: boolean;
}

export interface TaskFailure {
  code: string;
  message: string;
}

/** A hold outlives the task's deadline by this much: the runner times the task out well before it is given back. */
const HOLD_MARGIN_MS = 15 * 60_000;

const LIVE: TaskStatus[] = ['queued', 'running'];

/**
 * svc_file_id of outputs[0] when that entry is archived. The output's shape is @gensvc/contracts task-output.ts
 * (which this lib does not import); the archiver sets svc_file_id together with archive_status 'archived'.
 */
function archivedFileId(output: Prisma.JsonValue): string | null {
  const outputs = output !== null && typeof output === 'object' && !Array.isArray(output) ? output.outputs : undefined;
  const first = Array.isArray(outputs) ? outputs[0] : undefined;
  if (first === null || typeof first !== 'object' || Array.isArray(first)) return null;
  return first.archive_status === 'archived' && typeof first.svc_file_id === 'string' ? first.svc_file_id : null;
}

export const taskRepository = {
  /** Holds the price and writes the queued task, in one transaction: both or neither (402 when it cannot hold). */
  create(db: DbClient, input: CreateTaskInput, now = new Date()) {
    return withTx(db, async (tx) => {
      const hold = await billingRepository.reserve(tx, {
        workspaceId: input.workspaceId,
        apiKeyId: input.apiKeyId,
        requestId: input.requestId,
        amount: input.amount,
        ttlMs: input.deadlineAt.getTime() - now.getTime() + HOLD_MARGIN_MS,
      });
      return tx.task.create({
        data: {
          id: input.id,
          workspaceId: input.workspaceId,
          apiKeyId: input.apiKeyId,
          requestId: input.requestId,
          model: input.model,
          operation: input.operation,
          input: input.input,
          callbackUrl: input.callbackUrl,
          reservationId: hold.id,
          reserved: hold.amount,
          deadlineAt: input.deadlineAt,
          createdAt: now,
        },
      });
    });
  },

  /** The workspace's task; null for another workspace's (DESIGN.md §4: 404, never 403). */
  async get(db: DbClient, workspaceId: string, id: string) {
    const task = await db.task.findUnique({ where: { id } });
    return task && task.workspaceId === workspaceId ? task : null;
  },

  /** Any task by id, for workers (their jobs carry ids only). */
  find(db: DbClient, id: string) {
    return db.task.findUnique({ where: { id } });
  },

  /**
   * The library file of the task's archived output (outputs[0], the one its envelope shows) while the file is
   * visible: what a download link may point at, signed afresh on each read (spec §2.4). Null before the output is
   * archived, when archiving gave up, and once the file has expired or been deleted (a link would answer 404).
   * Only an archived entry costs a query.
   */
  async archivedOutputFile(db: DbClient, task: Pick<TaskRow, 'workspaceId' | 'output'>, now = new Date()) {
    const fileId = archivedFileId(task.output);
    return fileId ? fileRepository.get(db, task.workspaceId, fileId, now) : null;
  },

  /** archivedOutputFile for a page of tasks, in one query: task id → its visible archived output file. */
  async archivedOutputFiles(db: DbClient, tasks: readonly Pick<TaskRow, 'id' | 'workspaceId' | 'output'>[], now = new Date()) {
    const wanted = tasks.flatMap((t) => {
      const fileId = archivedFileId(t.output);
      return fileId ? [{ taskId: t.id, workspaceId: t.workspaceId, fileId }] : [];
    });
    const files = wanted.length ? await db.file.findMany({ where: { id: { in: wanted.map((w) => w.fileId) }, expiresAt: { gt: now } } }) : [];
    const byId = new Map(files.map((f) => [f.id, f]));
    const found = new Map<string, (typeof files)[number]>();
    for (const w of wanted) {
      const file = byId.get(w.fileId);
      if (file && file.workspaceId === w.workspaceId) found.set(w.taskId, file);
    }
    return found;
  },

  /** One page in (createdAt, id) order; null when `after` is not a task of this workspace. */
  async list(db: DbClient, workspaceId: string, input: ListTasksInput) {
    const where: Prisma.TaskWhereInput = { workspaceId, ...(input.status !== undefined ? { status: input.status } : {}) };
    if (input.after !== undefined) {
      const cursor = await db.task.findUnique({ where: { id: input.after }, select: { workspaceId: true, createdAt: true, id: true } });
      if (!cursor || cursor.workspaceId !== workspaceId) return null;
      const beyond = input.order === 'desc' ? 'lt' : 'gt';
      where.AND = [{ OR: [{ createdAt: { [beyond]: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { [beyond]: cursor.id } }] }];
    }
    const rows = await db.task.findMany({ where, orderBy: [{ createdAt: input.order }, { id: input.order }], take: input.limit + 1 });
    return { data: rows.slice(0, input.limit), hasMore: rows.length > input.limit };
  },

  /**
   * queued → running with the provider's job recorded and the first poll counted (attempts = 1). False when the
   * task is no longer queued (canceled meanwhile, or submitted by another run): the caller cancels its job.
   */
  async markSubmitted(db: DbClient, id: string, job: SubmittedJob, now = new Date()): Promise<boolean> {
    const { count } = await db.task.updateMany({
      where: { id, status: 'queued', upstreamId: null },
      data: { status: 'running', channelId: job.channelId, upstreamId: job.upstreamId, upstreamUrls: job.upstreamUrls ?? undefined, attempts: 1, startedAt: now, updatedAt: now },
    });
    return count === 1;
  },

  /**
   * Counts a poll that found the job still running: attempts `attempt` → `attempt + 1`. False when the poll is stale
   * (its count is not the task's, or the task moved on), so the caller schedules nothing: one poll chain per task.
   */
  async advancePoll(db: DbClient, id: string, attempt: number, now = new Date()): Promise<boolean> {
    const count = await db.$executeRaw`
      UPDATE "Task" SET attempts = ${attempt + 1}, "updatedAt" = ${now}::timestamp(3)
      WHERE id = ${id} AND attempts = ${attempt} AND status = 'running' AND output IS NULL`;
    return count === 1;
  },

  /**
   * The provider finished: records the output (archive_status pending on every entry) and settles the hold, in one
   * transaction. The task stays running until the archiver has dealt with every output (completeIfArchived). Null
   * when the task was not running without an output (canceled or failed meanwhile, or recorded by another run).
   */
  recordOutput(db: DbClient, id: string, output: Prisma.InputJsonValue, cost: bigint, now = new Date()) {
    return withTx(db, async (tx) => {
      const rows = await tx.$queryRaw<{ reservationId: string | null; model: string }[]>`
        UPDATE "Task" SET output = ${JSON.stringify(output)}::jsonb, "updatedAt" = ${now}::timestamp(3)
        WHERE id = ${id} AND status = 'running' AND output IS NULL
        RETURNING "reservationId", model`;
      const row = rows[0];
      if (!row) return null;
      const settled = row.reservationId ? await billingRepository.settle(tx, row.reservationId, { cost, model: row.model, taskId: id }) : null;
      const charged = settled?.charged ?? 0n;
      await tx.$executeRaw`UPDATE "Task" SET cost = ${charged} WHERE id = ${id}`;
      return { charged };
    });
  },

  /**
   * running → completed once no output is still pending archive. Sets the callback pending when there is a
   * callback_url. Returns what scheduling that callback needs (its first attempt is `callbackRoundStart`) and whether
   * one is due; null when the task was not completed by this call.
   */
  async completeIfArchived(db: DbClient, id: string, now = new Date()): Promise<CompletedTask | null> {
    const rows = await db.$queryRaw<(Omit<CompletedTask, 'callback'> & { callbackUrl: string | null })[]>`
      UPDATE "Task" SET status = 'completed', "completedAt" = ${now}::timestamp(3), "updatedAt" = ${now}::timestamp(3),
        "callbackState" = CASE WHEN "callbackUrl" IS NULL THEN 'none'::"CallbackState" ELSE 'pending'::"CallbackState" END
      WHERE id = ${id} AND status = 'running' AND output IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(output -> 'outputs') AS e WHERE coalesce(e ->> 'archive_status', 'pending') = 'pending')
      RETURNING id, "workspaceId", "callbackRoundStart", "callbackUrl"`;
    if (!rows[0]) return null;
    const { callbackUrl, ...task } = rows[0];
    return { ...task, callback: callbackUrl !== null };
  },

  /**
   * Ends a live task that has no output yet as failed or canceled and gives its hold back, in one transaction.
   * Returns the task as it now is, with whether a callback is due (and its upstreamId, the provider job to cancel);
   * null when the task had already finished or its output was already recorded (the success won the race).
   */
  finish(db: DbClient, id: string, how: { status: 'failed'; failure: TaskFailure } | { status: 'canceled' }, opts: { workspaceId?: string; now?: Date } = {}) {
    const now = opts.now ?? new Date();
    const code = how.status === 'failed' ? how.failure.code : null;
    const message = how.status === 'failed' ? how.failure.message.slice(0, 2000) : null;
    return withTx(db, async (tx): Promise<FinishedTask | null> => {
      // RETURNING * gives the row as findUnique does (same columns, same types): callers render it without a re-read.
      const rows = await tx.$queryRaw<TaskRow[]>`
        UPDATE "Task" SET status = ${how.status}::"TaskStatus", "errorCode" = ${code}, "errorMessage" = ${message},
          "completedAt" = ${now}::timestamp(3), "updatedAt" = ${now}::timestamp(3),
          "callbackState" = CASE WHEN "callbackUrl" IS NULL THEN 'none'::"CallbackState" ELSE 'pending'::"CallbackState" END
        WHERE id = ${id} AND status IN ('queued', 'running') AND output IS NULL
          AND (${opts.workspaceId ?? null}::text IS NULL OR "workspaceId" = ${opts.workspaceId ?? null})
        RETURNING *`;
      const row = rows[0];
      if (!row) return null;
      if (row.reservationId) await billingRepository.release(tx, row.reservationId);
      return { ...row, callback: row.callbackUrl !== null };
    });
  },

  /**
   * Live tasks that have not moved since `before`: their job may have vanished (Redis flushed) or died with its
   * worker. The reconciler makes sure each has its next job.
   */
  stale(db: DbClient, before: Date, limit: number) {
    return db.task.findMany({
      where: { status: { in: LIVE }, updatedAt: { lt: before } },
      select: { id: true, workspaceId: true, status: true, upstreamId: true, attempts: true, output: true },
      orderBy: { updatedAt: 'asc' },
      take: limit,
    });
  },

  /** Marks a task as looked at by the reconciler, so the next sweep moves on to others. */
  async touch(db: DbClient, id: string, now = new Date()): Promise<void> {
    await db.task.updateMany({ where: { id, status: { in: LIVE } }, data: { updatedAt: now } });
  },
};

/** A task row as findUnique reads it (and RETURNING * gives it). */
export type TaskRow = Task;

/** A task that has just finished (failed or canceled), and whether its callback is due. */
export type FinishedTask = TaskRow & { callback: boolean };
