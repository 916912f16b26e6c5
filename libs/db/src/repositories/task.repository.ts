// Generation tasks (DESIGN.md §4): queued → running → completed | failed, and queued | running → canceled; and
// each finished task's callback delivery: none → pending → delivered | parked (a redelivery makes it pending again).
//
// This repository is the only writer of Task rows (`libs/db/src/boundaries.test.ts` fails on any other): creation,
// submission, each poll, the provider's result, each output's archive, completion, failure, cancel, an image edit's
// completed task, and the delivery state. The shape of Task.output is @gensvc/contracts task-output.ts.
//
// Every transition is one conditional UPDATE on the task row, so racing writers (a cancel and the provider's
// success, two archive jobs, a re-run job and the reconciler) serialise on the row lock and exactly one wins. The
// money moves in the same transaction as the transition that decides it: the success that records the output
// settles the hold, the failure or cancel that ends the task releases it; settle and release are themselves
// idempotent, so no task is ever charged twice or charged and failed.
//
// Raw updates set "updatedAt" themselves (Prisma's @updatedAt applies to its own writes only): the reconciler reads
// it as the time the task last moved.
import {
  TASK_OPERATIONS,
  archivedFileIdOf,
  type ProviderJob,
  type TaskOutput,
  type TaskOutputEntry,
} from '@gensvc/contracts';
import type { AppError } from '@gensvc/errors';
import { queryPrepared, type DbClient } from '../client';
import { Prisma, type Task } from '../generated/prisma/client';
import type { TaskStatus, Tier } from '../generated/prisma/enums';
import { newId } from '../ids';
import { refusalOf } from './billing.repository';
import type { RecordAttemptInput } from './callback.repository';
import { fileRepository, isArchivedOutputOf, visibleFile, type CreateFileInput } from './file.repository';

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
  /** The caller's deadline (deadline_seconds, Cancel-After), when it gave one. */
  cancelAfter?: Date | null;
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

/** One archive outcome to record (recordArchive): the output's entry patch, and its library row when archived. */
export interface RecordArchiveInput {
  taskId: string;
  outputIndex: number;
  patch: Partial<TaskOutputEntry>;
  file?: CreateFileInput;
}

/**
 * What recording an archive outcome did: the completion it made (null: none), and whether its library row was written.
 */
export interface RecordedArchive {
  completed: CompletedTask | null;
  fileCreated: boolean;
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

// The per-task statements of the pipeline (creation, submit, each poll, the result, each archive) run as named
// prepared statements on the pg pool (queryPrepared): through Prisma each would pay its query compiler or raw-query
// path on every call, the costliest step of a task. Times go in as ISO strings with Z and come out
// `AT TIME ZONE 'UTC'`, and bigints as text, so rows read as Prisma reads them in any zone (taskRowOf).

/** A Task row's columns as taskRowOf reads them; `t` is the row's alias. */
const taskColumns = (
  t: string,
) => `${t}.id, ${t}."workspaceId", ${t}."apiKeyId", ${t}.model, ${t}.operation, ${t}.status, ${t}.input,
  ${t}."callbackUrl", ${t}."channelId", ${t}."upstreamId", ${t}."upstreamUrls", ${t}."reservationId",
  ${t}."deadlineAt" AT TIME ZONE 'UTC' AS "deadlineAt",
  ${t}."cancelAfter" AT TIME ZONE 'UTC' AS "cancelAfter", ${t}."callbackRoundStart", ${t}.output, ${t}."errorCode",
  ${t}."errorMessage", ${t}."requestId", ${t}.reserved::text AS reserved, ${t}.cost::text AS cost, ${t}.attempts,
  ${t}."providerJobs", ${t}."callbackState", ${t}."deliveredAt" AT TIME ZONE 'UTC' AS "deliveredAt",
  ${t}."createdAt" AT TIME ZONE 'UTC' AS "createdAt", ${t}."updatedAt" AT TIME ZONE 'UTC' AS "updatedAt",
  ${t}."startedAt" AT TIME ZONE 'UTC' AS "startedAt", ${t}."completedAt" AT TIME ZONE 'UTC' AS "completedAt"`;

type RawTaskRow = Omit<TaskRow, 'reserved' | 'cost'> & { reserved: string; cost: string | null };

/** A row selected with taskColumns, typed as findUnique types it. */
const taskRowOf = ({ reserved, cost, ...row }: RawTaskRow): TaskRow => ({
  ...row,
  reserved: BigInt(reserved),
  cost: cost === null ? null : BigInt(cost),
});

const iso = (d: Date) => d.toISOString();

// Creations as a group: each item held and written as alone, in order, in one statement (migration 20261126200000).
const CREATE_MANY = `SELECT hold, status, attempts, "callbackState", "callbackRoundStart"
  FROM gensvc_task_create_many($1::jsonb, $2::timestamp(3))`;

/**
 * What CREATE_MANY answers per item: the hold's outcome and the columns the row took from their defaults (the schema
 * stays their one source). The rest of the row is the item's own fields, so the row is not read back.
 */
type CreatedRow = { hold: string } & Pick<TaskRow, 'status' | 'attempts' | 'callbackState' | 'callbackRoundStart'>;

const FIND = `SELECT ${taskColumns('t')} FROM "Task" t WHERE t.id = $1`;

// Statements that name a task by id and test its status compare the status as text, which no index serves: the
// status index is partial over the live tasks (migration 20261126060000), so once the table is analysed it looks far
// cheaper than the primary key, and a plan on it read every queued or running task (and each dead entry their
// transitions left there) to find the one (migration 20261126090000 does the same in the functions).
// transition-plans.int.test pins their plans.

export const MARK_SUBMITTED = `
  UPDATE "Task" SET status = 'running', "channelId" = $2, "upstreamId" = $3,
    "upstreamUrls" = coalesce($4::jsonb, "upstreamUrls"), attempts = attempts + 1,
    "startedAt" = $5::timestamp(3), "updatedAt" = $5::timestamp(3)
  WHERE id = $1 AND status::text = 'queued' AND "upstreamId" IS NULL
  RETURNING id`;

/**
 * running → queued again for a new provider job, the ended one appended to providerJobs. Only from the poll that
 * found it ended (its upstreamId and poll count), while the task has no output and resubmits are left; the hold is
 * untouched, so it is settled once by the job that succeeds or released once when the task fails.
 */
const RESUBMIT = `
  UPDATE "Task" SET status = 'queued', "upstreamId" = NULL, "upstreamUrls" = NULL,
    "providerJobs" = "providerJobs" || jsonb_build_array($4::jsonb), "updatedAt" = $5::timestamp(3)
  WHERE id = $1 AND status::text = 'running' AND "upstreamId" = $2 AND attempts = $3::int AND output IS NULL
    AND jsonb_array_length("providerJobs") < $6::int
  RETURNING id`;

export const ADVANCE_POLL = `
  UPDATE "Task" SET attempts = $2::int + 1, "updatedAt" = $3::timestamp(3)
  WHERE id = $1 AND attempts = $2::int AND status::text = 'running' AND output IS NULL`;

export const RECORD_OUTPUT = `
  SELECT r.charged::text AS charged FROM gensvc_task_record_output($1, $2::jsonb, $3::bigint, $4, $5::timestamp(3)) r`;

/**
 * operation → the kind of output it makes (@gensvc/contracts), as the webhook statements take it: the entries kept are
 * the task's kind's.
 */
export const OUTPUT_KINDS = JSON.stringify(
  Object.fromEntries(Object.entries(TASK_OPERATIONS).map(([operation, { kind }]) => [operation, kind])),
);

// Each item's answer in its order.
export const RECORD_WEBHOOK_OUTPUTS = `
  SELECT r.outcome, r.kind, r.charged::text AS charged, r."workspaceId", r.model
  FROM gensvc_task_record_webhook_outputs($1::jsonb, $2::jsonb, $3::timestamp(3))
       WITH ORDINALITY AS r(outcome, kind, charged, "workspaceId", model, attempts, n)
  ORDER BY r.n`;

const ARCHIVE_SOURCE = `
  SELECT t.id, t."workspaceId", t.output, w.tier, w."retentionDays", f.id AS "fileId", f.bytes::text AS "fileBytes"
  FROM "Task" t JOIN "Workspace" w ON w.id = t."workspaceId"
  LEFT JOIN LATERAL (SELECT id, bytes FROM "File" WHERE "taskId" = t.id AND "outputIndex" = $2::int LIMIT 1) f ON true
  WHERE t.id = $1`;

/**
 * recordArchive's statement. The task is found by primary key and locked first, so racing archives of one task
 * serialise on its row and exactly one completes it. The outcome comes as one JSON object.
 */
const RECORD_ARCHIVE = `
  WITH e AS (
    SELECT * FROM jsonb_to_record($1::jsonb) AS e("taskId" text, "outputIndex" int, patch jsonb, "fileId" text,
      "fileWorkspaceId" text, source text, purpose text, filename text, "contentType" text, bytes bigint, sha256 text,
      "storageKey" text, "fileCreatedAt" timestamp(3),
      "expiresAt" timestamp(3), "publicExpiresAt" timestamp(3), "archiveStatus" text)
  ), cur AS (
    SELECT t.id, t.status, t.output, e."outputIndex", e.patch FROM "Task" t JOIN e ON e."taskId" = t.id
    WHERE jsonb_typeof(t.output -> 'outputs' -> e."outputIndex") = 'object'
    FOR UPDATE OF t
  ), copy AS (
    INSERT INTO "File" (id, "workspaceId", source, purpose, filename, "contentType", bytes, sha256, "storageKey",
                        "createdAt", "expiresAt", "publicExpiresAt", "taskId", "outputIndex", "archiveStatus")
    SELECT e."fileId", e."fileWorkspaceId", e.source::"FileSource", e.purpose, e.filename, e."contentType", e.bytes,
           e.sha256, e."storageKey", e."fileCreatedAt",
      e."expiresAt", e."publicExpiresAt", e."taskId", e."outputIndex", e."archiveStatus"::"ArchiveStatus"
    FROM e JOIN cur ON cur.id = e."taskId"
    WHERE e."fileId" IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id
  ), next AS (
    SELECT cur.id, n.output,
           cur.status = 'running' AND NOT EXISTS (
             SELECT 1 FROM jsonb_array_elements(n.output -> 'outputs') AS o
             WHERE coalesce(o ->> 'archive_status', 'pending') = 'pending'
           ) AS completes
    FROM cur CROSS JOIN LATERAL (
      SELECT jsonb_set(cur.output, ARRAY['outputs', cur."outputIndex"::text],
                       (cur.output -> 'outputs' -> cur."outputIndex") || cur.patch) AS output
    ) AS n
  ), done AS (
    UPDATE "Task" t SET output = next.output,
      "updatedAt" = CASE WHEN t.status = 'running' THEN $2::timestamp(3) ELSE t."updatedAt" END,
      status = CASE WHEN next.completes THEN 'completed'::"TaskStatus" ELSE t.status END,
      "completedAt" = CASE WHEN next.completes THEN $2::timestamp(3) ELSE t."completedAt" END,
      "callbackState" = CASE WHEN NOT next.completes THEN t."callbackState"
                             WHEN t."callbackUrl" IS NULL THEN 'none'::"CallbackState"
                             ELSE 'pending'::"CallbackState" END
    FROM next WHERE t.id = next.id
    RETURNING t.id, t."workspaceId", t."callbackUrl", t."callbackRoundStart", next.completes
  )
  SELECT coalesce(done.completes, false) AS completes, EXISTS (SELECT 1 FROM copy) AS "fileCreated",
    done.id, done."workspaceId", done."callbackUrl", done."callbackRoundStart"
  FROM e LEFT JOIN done ON true`;

export const taskRepository = {
  /**
   * Holds each task's price and writes it queued, in one statement, in order (the edge groups the creations of one
   * key: Holds). Answers one entry per input: the task, or the 402 (an AppError) of an item whose hold could not be
   * made, which wrote nothing. One transaction: a failure of the statement writes none of them.
   */
  async createMany(
    db: DbClient,
    inputs: readonly CreateTaskInput[],
    now = new Date(),
  ): Promise<(TaskRow | AppError)[]> {
    const items = inputs.map((input) => {
      // Times as stored (timestamp(3)): whole milliseconds, as a Date already is.
      const deadlineAt = iso(input.deadlineAt);
      return {
        reservationId: newId('res'),
        workspaceId: input.workspaceId,
        apiKeyId: input.apiKeyId,
        requestId: input.requestId,
        amount: input.amount.toString(),
        holdExpires: iso(new Date(input.deadlineAt.getTime() + HOLD_MARGIN_MS)),
        id: input.id,
        model: input.model,
        operation: input.operation,
        input: input.input,
        callbackUrl: input.callbackUrl,
        deadlineAt,
        cancelAfter: input.cancelAfter ? iso(input.cancelAfter) : null,
      };
    });
    const param = JSON.stringify(items);
    const rows = await queryPrepared<CreatedRow>(db, 'gensvc_task_create_many', CREATE_MANY, [param, iso(now)]);
    // Each input as stored (JSON's round trip, as a read gives it back), from the one serialisation sent.
    const stored = JSON.parse(param) as { input: Prisma.JsonValue }[];
    return inputs.map((input, i) => {
      const row = rows[i];
      const refusal = refusalOf(row?.hold);
      if (refusal) return refusal;
      const { status, attempts, callbackState, callbackRoundStart } = row!;
      return {
        id: input.id,
        workspaceId: input.workspaceId,
        apiKeyId: input.apiKeyId,
        model: input.model,
        operation: input.operation,
        status,
        input: stored[i]!.input,
        callbackUrl: input.callbackUrl,
        channelId: null,
        upstreamId: null,
        upstreamUrls: null,
        reservationId: items[i]!.reservationId,
        deadlineAt: new Date(input.deadlineAt.getTime()),
        cancelAfter: input.cancelAfter ? new Date(input.cancelAfter.getTime()) : null,
        callbackRoundStart,
        output: null,
        errorCode: null,
        errorMessage: null,
        requestId: input.requestId,
        reserved: input.amount,
        cost: null,
        attempts,
        providerJobs: [],
        callbackState,
        deliveredAt: null,
        createdAt: new Date(now.getTime()),
        updatedAt: new Date(now.getTime()),
        startedAt: null,
        completedAt: null,
      };
    });
  },

  /** The workspace's task; null for another workspace's (DESIGN.md §4: 404, never 403). */
  async get(db: DbClient, workspaceId: string, id: string) {
    const task = await db.task.findUnique({ where: { id } });
    return task && task.workspaceId === workspaceId ? task : null;
  },

  /** Any task by id, for workers (their jobs carry ids only), and the provider webhook route. */
  async find(db: DbClient, id: string): Promise<TaskRow | null> {
    const [row] = await queryPrepared<RawTaskRow>(db, 'gensvc_task_find', FIND, [id]);
    return row ? taskRowOf(row) : null;
  },

  /**
   * For a page of tasks, in one query: task id → the library file of its archived output (outputs[0], the one its
   * envelope shows) while the file is visible (isArchivedOutputOf): what a download link may point at, signed afresh
   * on each read (spec §2.4). Absent before the output is archived, when archiving gave up, and once the file has
   * expired or been deleted (a link would answer 404).
   */
  async archivedOutputFiles(
    db: DbClient,
    tasks: readonly Pick<TaskRow, 'id' | 'workspaceId' | 'output'>[],
    now = new Date(),
  ) {
    const wanted = tasks.flatMap((t) => {
      const fileId = archivedFileIdOf(t.output);
      return fileId ? [{ taskId: t.id, task: t, fileId }] : [];
    });
    const files = wanted.length
      ? await db.file.findMany({ where: { id: { in: wanted.map((w) => w.fileId) }, ...visibleFile(now) } })
      : [];
    const byId = new Map(files.map((f) => [f.id, f]));
    const found = new Map<string, (typeof files)[number]>();
    for (const w of wanted) {
      const file = byId.get(w.fileId);
      if (file && isArchivedOutputOf(w.task, file, now)) found.set(w.taskId, file);
    }
    return found;
  },

  /** One page in (createdAt, id) order; null when `after` is not a task of this workspace. */
  async list(db: DbClient, workspaceId: string, input: ListTasksInput) {
    const where: Prisma.TaskWhereInput = {
      workspaceId,
      ...(input.status !== undefined ? { status: input.status } : {}),
    };
    if (input.after !== undefined) {
      const cursor = await db.task.findUnique({
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
    const rows = await db.task.findMany({
      where,
      orderBy: [{ createdAt: input.order }, { id: input.order }],
      take: input.limit + 1,
    });
    return { data: rows.slice(0, input.limit), hasMore: rows.length > input.limit };
  },

  /**
   * Hands a running task whose provider job `job.upstreamId` ended retryably (found by poll `attempt`) back to the
   * submit step, recording the ended job (RESUBMIT). False when the task moved on, another poll decided, or
   * `maxResubmits` jobs have ended already: the caller fails the task then.
   */
  async resubmit(
    db: DbClient,
    id: string,
    job: { upstreamId: string; attempt: number; ended: ProviderJob; maxResubmits: number },
    now = new Date(),
  ): Promise<boolean> {
    const values = [id, job.upstreamId, job.attempt, JSON.stringify(job.ended), iso(now), job.maxResubmits];
    const rows = await queryPrepared(db, 'gensvc_task_resubmit', RESUBMIT, values);
    return rows.length === 1;
  },

  /**
   * queued → running with the provider's job recorded and its first poll counted (attempts + 1: poll numbers keep
   * growing across resubmits, so an earlier job's polls are stale). False when the
   * task is no longer queued (canceled meanwhile, or submitted by another run): the caller cancels its job.
   */
  async markSubmitted(db: DbClient, id: string, job: SubmittedJob, now = new Date()): Promise<boolean> {
    const urls = job.upstreamUrls === null ? null : JSON.stringify(job.upstreamUrls);
    const values = [id, job.channelId, job.upstreamId, urls, iso(now)];
    const rows = await queryPrepared(db, 'gensvc_task_mark_submitted', MARK_SUBMITTED, values);
    return rows.length === 1;
  },

  /**
   * Counts a poll that found the job still running: attempts `attempt` → `attempt + 1`. False when the poll is stale
   * (its count is not the task's, or the task moved on), so the caller schedules nothing: one poll chain per task.
   */
  async advancePoll(db: DbClient, id: string, attempt: number, now = new Date()): Promise<boolean> {
    const rows = await queryPrepared(db, 'gensvc_task_advance_poll', `${ADVANCE_POLL} RETURNING 1`, [
      id,
      attempt,
      iso(now),
    ]);
    return rows.length === 1;
  },

  /**
   * The provider finished: records the output (archive_status pending on every entry) and settles the hold, in one
   * statement (gensvc_task_record_output). The task stays running until the archiver has dealt with every output
   * (recordArchive). Null when the task was not running without an output (canceled or failed meanwhile, or
   * recorded by another run).
   */
  async recordOutput(
    db: DbClient,
    id: string,
    output: TaskOutput,
    cost: bigint,
    now = new Date(),
  ): Promise<{ charged: bigint } | null> {
    const values = [id, JSON.stringify(output), cost.toString(), newId('led'), iso(now)];
    const [row] = await queryPrepared<{ charged: string }>(db, 'gensvc_task_record_output', RECORD_OUTPUT, values);
    return row ? { charged: BigInt(row.charged) } : null;
  },

  /**
   * Provider webhooks' results, in one statement (gensvc_task_record_webhook_outputs), each item checked and recorded
   * as alone, in order, by gensvc_task_record_webhook_output: for the task whose recorded provider job id is
   * `upstreamId` (the id the provider signed), of a channel of `provider`, running with no output, records the entries
   * `outputs` holds for the task's output kind (OUTPUT_KINDS) and settles the hold (recordOutput's function, as
   * conditional). 'recorded' with the charge and what the caller's next steps need (the task's workspace, model, poll
   * count, the kind recorded); 'done' when this job's task has its result already or has ended; 'not_this' when the
   * task is not this job's (or is gone, or still submitting); 'needs_row' when `outputs` has no entries for the task's
   * kind (nothing written: the caller records it the long way); 'moved_on' when the task changed between the check and
   * the write. The edge groups the results that arrive while its previous group is in flight; migration
   * 20261126210000 locks the rows of every item first, in the order every writer takes them. One transaction: a failure
   * records none of them.
   */
  async recordWebhookOutputs(
    db: DbClient,
    inputs: readonly WebhookOutputInput[],
    now = new Date(),
  ): Promise<WebhookOutputRecord[]> {
    type Row = {
      outcome: WebhookOutputRecord['outcome'];
      kind: string | null;
      charged: string | null;
      workspaceId: string | null;
      model: string | null;
    };
    const items = inputs.map((input) => ({
      task: input.id,
      upstreamId: input.upstreamId,
      provider: input.provider,
      outputs: input.outputs,
      ledgerId: newId('led'),
    }));
    const rows = await queryPrepared<Row>(db, 'gensvc_task_record_webhook_outputs', RECORD_WEBHOOK_OUTPUTS, [
      JSON.stringify(items),
      OUTPUT_KINDS,
      iso(now),
    ]);
    return inputs.map((input, i) => {
      const row = rows[i]!;
      if (row.outcome !== 'recorded') return { outcome: row.outcome };
      return {
        outcome: 'recorded',
        kind: row.kind!,
        charged: BigInt(row.charged!),
        task: { id: input.id, workspaceId: row.workspaceId!, model: row.model! },
      };
    });
  },

  /**
   * What archiving output `outputIndex` needs, in one read: the task's output and workspace (for the file's lives),
   * and the library row of that output when an earlier attempt made it. Null when the task is gone.
   */
  async archiveSource(db: DbClient, id: string, outputIndex: number) {
    const [row] = await queryPrepared<{
      id: string;
      workspaceId: string;
      output: Prisma.JsonValue;
      tier: Tier;
      retentionDays: number | null;
      fileId: string | null;
      fileBytes: string | null;
    }>(db, 'gensvc_task_archive_source', ARCHIVE_SOURCE, [id, outputIndex]);
    if (!row) return null;
    return {
      id: row.id,
      workspaceId: row.workspaceId,
      output: row.output,
      workspace: { id: row.workspaceId, tier: row.tier, retentionDays: row.retentionDays },
      archived: row.fileId === null ? null : { id: row.fileId, bytes: BigInt(row.fileBytes!) },
    };
  },

  /**
   * Records the archiver's outcome for output `outputIndex` in one statement: the library row of the copy (when
   * archived; an existing row of that output stands), the entry's patch (merged into that entry alone, so archives
   * of a task's outputs side by side never overwrite each other's), and, when no output is pending any more,
   * running → completed with the callback made pending when there is a callback_url. The row is locked first, so
   * racing archives of one task serialise and exactly one completes it. Returns the completion (for the callback
   * its caller schedules now) when this call completed the task, else null; and whether this call's file row was
   * written (false: a concurrent run of the same archive wrote it first, or the task has no such output).
   */
  async recordArchive(db: DbClient, input: RecordArchiveInput, now = new Date()): Promise<RecordedArchive> {
    const { taskId, outputIndex, patch, file } = input;
    const item = {
      taskId,
      outputIndex,
      patch,
      ...(file && {
        fileId: file.id,
        fileWorkspaceId: file.workspaceId,
        source: file.source,
        purpose: file.purpose,
        filename: file.filename,
        contentType: file.contentType,
        bytes: file.bytes.toString(),
        sha256: file.sha256 ?? null,
        storageKey: file.storageKey,
        fileCreatedAt: iso(file.createdAt ?? now),
        expiresAt: iso(file.expiresAt),
        publicExpiresAt: file.publicExpiresAt ? iso(file.publicExpiresAt) : null,
        archiveStatus: file.archiveStatus ?? 'archived',
      }),
    };
    type Row = Pick<TaskRow, 'id' | 'workspaceId' | 'callbackUrl' | 'callbackRoundStart'> & {
      completes: boolean;
      fileCreated: boolean;
    };
    const values = [JSON.stringify(item), iso(now)];
    const [row] = await queryPrepared<Row>(db, 'gensvc_task_record_archive', RECORD_ARCHIVE, values);
    const { completes, fileCreated, id, workspaceId, callbackUrl, callbackRoundStart } = row!;
    const completed = completes ? { id, workspaceId, callbackRoundStart, callback: callbackUrl !== null } : null;
    return { completed, fileCreated };
  },

  /**
   * running → completed once no output is still pending archive. Sets the callback pending when there is a
   * callback_url. Returns what scheduling that callback needs (its first attempt is `callbackRoundStart`) and whether
   * one is due; null when the task was not completed by this call.
   */
  async completeIfArchived(db: DbClient, id: string, now = new Date()): Promise<CompletedTask | null> {
    const rows = await db.$queryRaw<(Omit<CompletedTask, 'callback'> & { callbackUrl: string | null })[]>`
      UPDATE "Task" SET status = 'completed', "completedAt" = ${now}::timestamp(3), "updatedAt" = ${now}::timestamp(3),
        "callbackState" = CASE WHEN "callbackUrl" IS NULL THEN 'none'::"CallbackState"
        ELSE 'pending'::"CallbackState" END
      WHERE id = ${id} AND status::text = 'running' AND output IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(output -> 'outputs') AS e
                        WHERE coalesce(e ->> 'archive_status', 'pending') = 'pending')
      RETURNING id, "workspaceId", "callbackRoundStart", "callbackUrl"`;
    if (!rows[0]) return null;
    const { callbackUrl, ...task } = rows[0];
    return { ...task, callback: callbackUrl !== null };
  },

  /**
   * Ends a live task that has no output yet as failed or canceled (by request, or with a reason: its deadline) and
   * gives its hold back, in one transaction.
   * Returns the task as it now is, with whether a callback is due (and its upstreamId, the provider job to cancel);
   * null when the task had already finished or its output was already recorded (the success won the race).
   */
  async finish(
    db: DbClient,
    id: string,
    how: { status: 'failed'; failure: TaskFailure } | { status: 'canceled'; reason?: TaskFailure },
    opts: { workspaceId?: string; now?: Date } = {},
  ): Promise<FinishedTask | null> {
    const now = opts.now ?? new Date();
    // A cancel by request carries no code; one at the caller's deadline says so (deadline_exceeded).
    const why = how.status === 'failed' ? how.failure : how.reason;
    const code = why?.code ?? null;
    const message = why ? why.message.slice(0, 2000) : null;
    // One statement: the row is locked by its UPDATE before gensvc_release locks the reservation (the order every
    // transition uses). RETURNING * gives the row as findUnique does (same columns, same types): callers render it
    // without a re-read.
    const rows = await db.$queryRaw<(TaskRow & { released: boolean | null })[]>`
      WITH ended AS (
        UPDATE "Task" SET status = ${how.status}::"TaskStatus", "errorCode" = ${code}, "errorMessage" = ${message},
          "completedAt" = ${now}::timestamp(3), "updatedAt" = ${now}::timestamp(3),
          "callbackState" = CASE WHEN "callbackUrl" IS NULL THEN 'none'::"CallbackState"
          ELSE 'pending'::"CallbackState" END
        WHERE id = ${id} AND status::text IN ('queued', 'running') AND output IS NULL
          AND (${opts.workspaceId ?? null}::text IS NULL OR "workspaceId" = ${opts.workspaceId ?? null})
        RETURNING *
      )
      SELECT ended.*,
             CASE WHEN ended."reservationId" IS NULL THEN NULL ELSE gensvc_release(ended."reservationId") END
               AS released
      FROM ended`;
    const row = rows[0];
    if (!row) return null;
    const { released: _released, ...task } = row;
    return { ...task, callback: task.callbackUrl !== null };
  },

  /**
   * Live tasks the task-runner owes a step: queued ones that have not moved since `cut.queued` (a submit), and running
   * ones without the provider's result that have not moved since `cut.running`, or are past their deadline at
   * `cut.now` (a poll). Their job may have vanished (Redis flushed) or died with its worker; a running task whose
   * provider was asked for a webhook has no poll at all until then, and its webhook may never come.
   */
  staleInProvider(db: DbClient, cut: { queued: Date; running: Date; now: Date }, limit: number) {
    return db.task.findMany({
      where: {
        OR: [
          { status: 'queued', updatedAt: { lt: cut.queued } },
          {
            status: 'running',
            output: { equals: Prisma.DbNull },
            OR: [{ updatedAt: { lt: cut.running } }, { deadlineAt: { lt: cut.now } }],
          },
        ],
      },
      select: { id: true, workspaceId: true, status: true, attempts: true },
      orderBy: { updatedAt: 'asc' },
      take: limit,
    });
  },

  /**
   * Live tasks without the provider's result whose caller's deadline (cancelAfter) has passed at `now`: their
   * task.deadline job may have vanished with Redis. Served by the partial index over live tasks.
   */
  overdue(db: DbClient, now: Date, limit: number) {
    return db.task.findMany({
      where: { status: { in: LIVE }, output: { equals: Prisma.DbNull }, cancelAfter: { lte: now } },
      select: { id: true, workspaceId: true, createdAt: true, cancelAfter: true },
      orderBy: { cancelAfter: 'asc' },
      take: limit,
    });
  },

  /** Running tasks whose result is recorded and that have not moved since `before`: the archiver owes them. */
  staleInArchive(db: DbClient, before: Date, limit: number) {
    return db.task.findMany({
      where: { status: 'running', output: { not: Prisma.DbNull }, updatedAt: { lt: before } },
      select: { id: true, workspaceId: true, output: true },
      orderBy: { updatedAt: 'asc' },
      take: limit,
    });
  },

  /** Marks a live task as looked at by a reconciler, so the next sweep moves on to others. */
  async touch(db: DbClient, id: string, now = new Date()): Promise<void> {
    await db.task.updateMany({ where: { id, status: { in: LIVE } }, data: { updatedAt: now } });
  },

  /**
   * Writes an image edit's task, completed at once (its result is in hand), with the library rows of the outputs
   * the edge stored. Joins the caller's transaction, which also settles the edit's hold.
   */
  async createCompleted(db: DbClient, input: CompletedEditInput): Promise<void> {
    await db.task.create({
      data: {
        id: input.id,
        workspaceId: input.workspaceId,
        apiKeyId: input.apiKeyId,
        model: input.model,
        operation: input.operation,
        status: 'completed',
        input: input.input,
        channelId: input.channelId,
        output: input.output as Prisma.InputJsonValue,
        requestId: input.requestId,
        reserved: input.reserved,
        cost: input.cost,
        attempts: 1,
        startedAt: input.startedAt,
        completedAt: input.completedAt,
      },
    });
    for (const file of input.files) await fileRepository.create(db, file);
  },

  // Delivery state. The decision (delivered, parked, the next attempt and when) is the dispatcher's
  // (services/callback-dispatcher/src/delivery-decision.ts); these only apply it, each conditionally, so applying
  // one outcome twice changes nothing.

  /**
   * A delivery decision applied, with the attempt outcome it was taken on recorded first (its CallbackAttempt row)
   * when the entry carries one, in one statement. The one place the delivery rule is written: pending → delivered
   * (as of the attempt's start) or → parked; or, for 'pending', the pending delivery marked as moved (for the
   * reconciler: a pending delivery that stops moving has lost its next job). The decision was made on the task as
   * read (`decidedOn`), so it is applied only while the task still is so (pending, the same round start, not a round
   * after the attempt's). `recorded` is whether the entry's attempt row was written now (false when it had one
   * already: a concurrent run of the same job, and nothing is applied then; false too for an entry without an
   * attempt, whose decision alone is applied: an outcome re-applied, the reconciler's move); `applied` false when
   * the task changed meanwhile (a redelivery), and `task` is its state as read then, for the caller to decide again.
   */
  async recordDeliveryAttempt(db: DbClient, entry: DeliveryAttemptEntry, now = new Date()): Promise<DeliveryRecord> {
    const [record] = await taskRepository.recordDeliveryAttempts(db, [{ entry, now }]);
    return record!;
  },

  /** recordDeliveryAttempt for several entries in one statement, each as of its own `now`; in the order given. */
  async recordDeliveryAttempts(
    db: DbClient,
    entries: readonly { entry: DeliveryAttemptEntry; now: Date }[],
  ): Promise<DeliveryRecord[]> {
    const items = entries.map(({ entry, now }) => {
      const { decidedOn, step } = entry;
      const input = 'input' in entry ? entry.input : null;
      return {
        id: newId('cba'),
        record: input !== null,
        workspaceId: input?.workspaceId ?? null,
        taskId: input?.taskId ?? (entry as DeliveryDecisionEntry).taskId,
        attempt: input?.attempt ?? step!.attempt,
        deliveryId: input?.deliveryId ?? null,
        url: input?.url ?? null,
        statusCode: input?.statusCode ?? null,
        durationMs: input?.durationMs ?? null,
        error: input?.error ?? null,
        responseHead: input?.responseHead ?? null,
        at: input?.at.toISOString() ?? null,
        roundStart: decidedOn.callbackRoundStart,
        to: step?.to ?? null,
        deliveredAt: step?.to === 'delivered' ? step.at.toISOString() : null,
        now: now.toISOString(),
      };
    });
    const [name, text, entriesJson] =
      items.length === 1
        ? ['gensvc_record_delivery_attempt', RECORD_DELIVERY_ATTEMPT, JSON.stringify(items[0])]
        : ['gensvc_record_delivery_attempts', RECORD_DELIVERY_ATTEMPTS, JSON.stringify(items)];
    const rows = await queryPrepared<{
      entryId: string;
      recorded: boolean;
      applied: boolean;
      taskId: string | null;
      workspaceId: string | null;
      callbackState: TaskRow['callbackState'] | null;
      callbackRoundStart: number | null;
    }>(db, name, text, [entriesJson]);
    const byEntry = new Map(rows.map((row) => [row.entryId, row]));
    return items.map(({ id }): DeliveryRecord => {
      const { recorded, applied, taskId, workspaceId, callbackState, callbackRoundStart } = byEntry.get(id)!;
      if (taskId === null) return { recorded, applied, task: null };
      return {
        recorded,
        applied,
        task: {
          id: taskId,
          workspaceId: workspaceId!,
          callbackState: callbackState!,
          callbackRoundStart: callbackRoundStart!,
        },
      };
    });
  },

  /**
   * Starts a new round of attempts for a finished task with a callback_url, delivered, parked or pending: its first
   * attempt follows the last one ever recorded. Returns that attempt number; null when the task is not finished or
   * has no callback_url.
   */
  async redeliver(
    db: DbClient,
    workspaceId: string,
    taskId: string,
    now = new Date(),
  ): Promise<{ attempt: number } | null> {
    const values = [taskId, workspaceId, iso(now)];
    const [row] = await queryPrepared<{ callbackRoundStart: number }>(db, 'gensvc_task_redeliver', REDELIVER, values);
    return row ? { attempt: row.callbackRoundStart } : null;
  },

  /**
   * redeliver for many: a new round for each of the workspace's deliveries parked at or after `since`, oldest first,
   * at most `limit`, in one statement. A delivery no longer parked (pending: recovered or retrying) is left as it is,
   * and one being recovered concurrently is skipped, so no task gets two rounds. `hasMore`: parked ones remain.
   */
  async recoverParked(
    db: DbClient,
    workspaceId: string,
    since: Date,
    limit: number,
    now = new Date(),
  ): Promise<{ rounds: { taskId: string; attempt: number }[]; hasMore: boolean }> {
    const rows = await queryPrepared<{ taskId: string | null; attempt: number | null }>(
      db,
      'gensvc_task_recover_parked',
      RECOVER_PARKED,
      [workspaceId, iso(since), iso(now), limit],
    );
    const rounds = rows.flatMap((r) => (r.taskId === null ? [] : [{ taskId: r.taskId, attempt: r.attempt! }]));
    return { rounds, hasMore: rounds.length < rows.length };
  },

  /** Tasks whose delivery is pending and has not moved since `before` (their job may have vanished). */
  stalePendingDeliveries(db: DbClient, before: Date, limit: number) {
    // On the pool, as the dispatcher's other statements (callback.repository.ts): its reconciler loads no Prisma.
    return queryPrepared<Pick<TaskRow, 'id' | 'workspaceId' | 'callbackState' | 'callbackRoundStart'>>(
      db,
      'gensvc_stale_pending_deliveries',
      STALE_PENDING_DELIVERIES,
      [before.toISOString(), limit],
    );
  },
};

/** redeliver's statement, prepared on the pool. */
const REDELIVER = `
  UPDATE "Task" t SET "callbackState" = 'pending', "updatedAt" = $3::timestamp(3),
    "callbackRoundStart" = coalesce((SELECT max(attempt) FROM "CallbackAttempt" a WHERE a."taskId" = t.id), 0) + 1
  WHERE t.id = $1 AND t."workspaceId" = $2 AND t."callbackUrl" IS NOT NULL
    AND t.status IN ('completed', 'failed', 'canceled')
  RETURNING t."callbackRoundStart"`;

/**
 * recoverParked's statement, through the partial callbackState index. The rows are locked in the order picked (SKIP
 * LOCKED: those a concurrent recovery holds are its own). The last, id-less row, present when more than `limit` were
 * parked as the statement began, says more remain.
 */
const PARKED_SINCE = `
  SELECT id FROM "Task" WHERE "callbackState" = 'parked' AND "workspaceId" = $1 AND "updatedAt" >= $2::timestamp(3)`;
const RECOVER_PARKED = `
  WITH picked AS (
    ${PARKED_SINCE} ORDER BY "updatedAt", id LIMIT $4::int FOR UPDATE SKIP LOCKED
  ), upd AS (
    UPDATE "Task" t SET "callbackState" = 'pending', "updatedAt" = $3::timestamp(3),
      "callbackRoundStart" = coalesce((SELECT max(attempt) FROM "CallbackAttempt" a WHERE a."taskId" = t.id), 0) + 1
    FROM picked WHERE t.id = picked.id
    RETURNING t.id, t."callbackRoundStart"
  )
  SELECT id AS "taskId", "callbackRoundStart" AS attempt FROM upd
  UNION ALL
  SELECT NULL, NULL WHERE (SELECT count(*) FROM (${PARKED_SINCE} LIMIT $4::int + 1) x) > $4::int`;

const STALE_PENDING_DELIVERIES = `
  SELECT id, "workspaceId", "callbackState", "callbackRoundStart" FROM "Task"
  WHERE "callbackState" = 'pending' AND "updatedAt" < $1::timestamp(3) ORDER BY "updatedAt" LIMIT $2::int`;

/**
 * recordDeliveryAttempts' statement, prepared on the pool. The entries come as one JSON object or array (ISO UTC
 * strings, which `timestamp(3)` keeps as UTC wall time, as Prisma stores DateTime); each task is delivered as of its
 * attempt's start, parked or moved as of its entry's `now`, once its attempt row is in (or at once for an entry that
 * records none). The final SELECT reads the tasks as the statement began (a data-modifying CTE's writes are not
 * visible to it): for an entry not applied, the state that made it so. Two entries of one task in one statement (two
 * runs of one attempt) insert one attempt row between them and update the task once. The state is compared as text,
 * which no index serves. The UPDATE and the final read find the tasks by primary key through an array of their ids:
 * the planner guesses 100 rows for the JSON, and against that guess a join or `IN` on it is planned as a scan of every
 * task while the table is small.
 */
const RECORD_DELIVERY_ATTEMPTS_FROM = (entries: string) => `
  WITH e AS (
    SELECT * FROM ${entries}($1::jsonb) AS e(id text, record boolean, "workspaceId" text, "taskId" text,
      attempt int, "deliveryId" text, url text, "statusCode" int, "durationMs" int, error text, "responseHead" text,
      at timestamp(3), "roundStart" int, "to" text, "deliveredAt" timestamp(3), now timestamp(3))
  ), rec AS (
    INSERT INTO "CallbackAttempt" (id, "workspaceId", "taskId", attempt, "deliveryId", url, "statusCode", "durationMs",
                                   error, "responseHead", "createdAt")
    SELECT id, "workspaceId", "taskId", attempt, "deliveryId", url, "statusCode", "durationMs", error, "responseHead",
           at
    FROM e WHERE record
    ON CONFLICT DO NOTHING
    RETURNING id
  ), upd AS (
    UPDATE "Task" t SET
      "callbackState" = CASE e."to" WHEN 'delivered' THEN 'delivered'::"CallbackState"
                                    WHEN 'parked' THEN 'parked'::"CallbackState" ELSE t."callbackState" END,
      "deliveredAt" = CASE WHEN e."to" = 'delivered' THEN e."deliveredAt" ELSE t."deliveredAt" END,
      "updatedAt" = CASE WHEN e."to" = 'delivered' THEN e."deliveredAt" ELSE e.now END
    FROM e LEFT JOIN rec ON rec.id = e.id
    WHERE t.id = ANY(ARRAY(SELECT "taskId" FROM e)) AND t.id = e."taskId" AND (rec.id IS NOT NULL OR NOT e.record)
      AND e."to" IS NOT NULL
      AND t."callbackState"::text = 'pending' AND t."callbackRoundStart" = e."roundStart"
      AND t."callbackRoundStart" <= e.attempt
    RETURNING e.id
  ), t AS (
    SELECT id, "workspaceId", "callbackState", "callbackRoundStart" FROM "Task"
    WHERE id = ANY(ARRAY(SELECT "taskId" FROM e))
  )
  SELECT e.id AS "entryId", rec.id IS NOT NULL AS recorded, upd.id IS NOT NULL AS applied,
    t.id AS "taskId", t."workspaceId", t."callbackState", t."callbackRoundStart"
  FROM e LEFT JOIN rec ON rec.id = e.id LEFT JOIN upd ON upd.id = e.id LEFT JOIN t ON t.id = e."taskId"`;
/** For one entry (a JSON object), a plan each connection keeps; for several (an array), planned for those given. */
const RECORD_DELIVERY_ATTEMPT = RECORD_DELIVERY_ATTEMPTS_FROM('jsonb_to_record');
const RECORD_DELIVERY_ATTEMPTS = RECORD_DELIVERY_ATTEMPTS_FROM('jsonb_to_recordset');

/**
 * One entry for recordDeliveryAttempt: an attempt's outcome, the task state its decision was made on, and the
 * decision; or a decision alone (DeliveryDecisionEntry), about an attempt recorded before.
 */
export type DeliveryAttemptEntry =
  | { input: RecordAttemptInput; decidedOn: { callbackRoundStart: number }; step: DeliveryUpdate | null }
  | DeliveryDecisionEntry;

/** A delivery decision about an attempt already recorded (or, for the reconciler, the round's first), applied alone. */
export interface DeliveryDecisionEntry {
  taskId: string;
  decidedOn: { callbackRoundStart: number };
  step: DeliveryUpdate;
}

/** What recording one attempt did (recordDeliveryAttempt). */
export interface DeliveryRecord {
  recorded: boolean;
  applied: boolean;
  task: Pick<TaskRow, 'id' | 'workspaceId' | 'callbackState' | 'callbackRoundStart'> | null;
}

/** How a delivery decision changes the task: the attempt it is about, and what it decided. */
export type DeliveryUpdate = { attempt: number } & (
  | { to: 'delivered'; at: Date }
  | { to: 'parked' }
  | { to: 'pending' }
);

export interface CompletedEditInput {
  id: string;
  workspaceId: string;
  apiKeyId: string;
  model: string;
  operation: string;
  input: Prisma.InputJsonValue;
  channelId: string;
  output: TaskOutput;
  requestId: string;
  reserved: bigint;
  cost: bigint;
  startedAt: Date;
  completedAt: Date;
  /** The library rows of the outputs already stored (generatedFile). */
  files: CreateFileInput[];
}

/**
 * A verified webhook's result for recordWebhookOutputs: the task, its signed job, the provider, the entries by kind.
 */
export interface WebhookOutputInput {
  id: string;
  upstreamId: string;
  provider: string;
  outputs: Readonly<Record<string, TaskOutput>>;
}

/** What recordWebhookOutputs did with one item (see there). */
export type WebhookOutputRecord =
  | { outcome: 'recorded'; kind: string; charged: bigint; task: Pick<TaskRow, 'id' | 'workspaceId' | 'model'> }
  | { outcome: 'done' | 'not_this' | 'needs_row' | 'moved_on' };

/** A task row as findUnique reads it (and RETURNING * gives it). */
export type TaskRow = Task;

/** A task that has just finished (failed or canceled), and whether its callback is due. */
export type FinishedTask = TaskRow & { callback: boolean };
