// Every job the system runs. Payloads carry ids and re-read their row (STYLE.md convention 2); evaluate is the
// one exception: it is synchronous for the caller and has no row, so the edge passes the request it validated.
// Three jobs made by a transition may also carry what that transition wrote, so that their first run need not read
// it back (issue 12): archive.output's `source`, task.submit's and callback.deliver's `carried`; the row still decides
// every write.
import { z } from 'zod';
import { evaluateInputSchema } from './evaluate';
import { OUTPUT_KINDS } from './task-output';
import { CALLBACK_STATES, TASK_STATUSES } from './task-operations';
import { defineJob, type JobPayload, type QueueName } from './job-contract';

const id = z.string().min(1);
const attempt = z.number().int().min(1);

export const EvaluateRun = defineJob({
  queue: 'evaluate',
  name: 'evaluate.run',
  // v2: the edge holds the cost against its budget lease and charges it when the reply reaches it; the worker only
  // answers (no reservation id), and publishes its result on `replyTo`.
  version: 2,
  key: (p) => [p.callId],
  schema: z.object({
    /** The caller's request id (for logs only: a caller may send its own X-Request-Id). */
    requestId: id,
    /** The edge's own id of this call (evl_…): the job's key, by which the reply finds its waiting caller. */
    callId: id,
    workspaceId: id,
    apiKeyId: id,
    /** Unix ms when the edge stops waiting: the worker makes no upstream call past it, and bounds each call by it. */
    deadlineAt: z.number().int().positive(),
    /** `<provider>/<model>`. */
    model: id,
    /** `{state, questions}` as the edge validated them. */
    request: evaluateInputSchema,
    /** The Redis channel of the edge process waiting for the answer: the worker publishes `{ id: <job id>, result }` on it. */
    replyTo: id,
  }),
});

/** Epoch milliseconds, or null. */
const msOrNull = z.number().nullable();

/**
 * What task.submit reads of its task before it calls the provider, as the creation wrote it: its status and poll
 * count (the schema's defaults, as the creation's statement answered them), the model, the operation, the input (the
 * row's JSON, checked by the submit as a read one is) and the deadline. A created row has no provider job and no
 * output yet.
 */
export const carriedSubmitSchema = z.object({
  status: z.enum(TASK_STATUSES),
  attempts: z.number().int().min(0),
  model: z.string().min(1),
  operation: z.string().min(1),
  input: z.unknown(),
  createdAt: z.number(),
  deadlineAt: msOrNull,
});
export type CarriedSubmit = z.infer<typeof carriedSubmitSchema>;

/**
 * Hands a queued task to a provider. `carried` (added by the edge with the creation it wrote) is what the submit would
 * read: the task-runner submits from it on the job's fresh first run (issue 12: one Postgres round trip less per task)
 * and reads as before otherwise; markSubmitted still decides on the row (a task canceled meanwhile is not recorded, and
 * its provider job is canceled).
 */
export const TaskSubmit = defineJob({
  queue: 'tasks',
  name: 'task.submit',
  // v2: `carried`. A v1 payload (ids only) parses as one without it, and reads.
  version: 2,
  retry: { attempts: 5, backoffMs: 1_000 },
  schema: z.object({ taskId: id, carried: carriedSubmitSchema.optional() }),
  key: (p) => [p.taskId],
});

/**
 * One poll of the provider; the next poll is a new delayed job, so no worker slot is held while waiting. `attempt`
 * is the task's poll count when the job was made: a job whose count is no longer the task's is stale and does
 * nothing, so at most one chain of polls lives per task however often the reconciler re-adds one. `ended`: a verified
 * provider webhook said the job has ended (the edge added this poll for it), so a protocol that can read the outcome
 * directly does (fal's result, without its status first).
 */
export const TaskPoll = defineJob({
  queue: 'tasks',
  name: 'task.poll',
  version: 1,
  retry: { attempts: 5, backoffMs: 1_000 },
  schema: z.object({ taskId: id, attempt, ended: z.literal(true).optional() }),
  key: (p) => [p.taskId, p.attempt],
});

/** Cancels the provider's job of a task the caller canceled (or that ran past its deadline); best effort. */
export const TaskCancel = defineJob({
  queue: 'tasks',
  name: 'task.cancel',
  version: 1,
  retry: { attempts: 5, backoffMs: 2_000 },
  schema: z.object({ taskId: id }),
  key: (p) => [p.taskId],
});

/**
 * Copies output `outputIndex` of a task into S3. v2: `source`, when the job is made by the transition that recorded
 * the output (the provider's result), is what that transition wrote and read: the entry's provider URL and kind, and
 * the workspace's retention (tier and own setting) the library row's lives come from. Neither changes once the
 * result is recorded (an output is recorded once; a workspace's retention moves only by an operator's change, taken
 * as of the result), so the archiver need not read them back: one Postgres round trip per output less (issue 12).
 * Without it (a reconciler's job, a v1 job) the archiver reads them from the row. The row still decides: the outcome
 * is written only while the task has that output, and the row's state says what is done.
 */
export const ArchiveOutput = defineJob({
  queue: 'archive',
  name: 'archive.output',
  version: 2,
  retry: { attempts: 5, backoffMs: 2_000 },
  schema: z.object({
    taskId: id,
    outputIndex: z.number().int().min(0),
    source: z
      .object({
        url: z.string().min(1),
        kind: z.enum(OUTPUT_KINDS),
        /** The workspace's tier as stored (Prisma's Tier). */
        tier: z.string().min(1),
        retentionDays: z.number().int().nullable(),
      })
      .optional(),
  }),
  key: (p) => [p.taskId, p.outputIndex],
});

/**
 * What a task's first delivery attempt reads before it sends, as the statement that completed the task left it: the
 * task's columns (those the envelope shows and the delivery decides on), its workspace's currency and the library
 * file of its first output, in the shape of the dispatcher's own read (times epoch ms, money decimal text). Never a
 * secret: `secretsVersion` says which signing secrets were current then (when they were made or last rotated), and the
 * dispatcher signs from the secrets it last read only when they are that version.
 */
export const carriedAttemptSchema = z.object({
  id,
  workspaceId: id,
  status: z.enum(TASK_STATUSES),
  model: z.string(),
  operation: z.string(),
  output: z.unknown(),
  reserved: z.string(),
  cost: z.string().nullable(),
  errorCode: z.string().nullable(),
  errorMessage: z.string().nullable(),
  callbackUrl: z.string().min(1),
  callbackState: z.enum(CALLBACK_STATES),
  callbackRoundStart: attempt,
  createdAt: z.number(),
  startedAt: msOrNull,
  completedAt: msOrNull,
  currency: z.string().min(1),
  fileId: z.string().nullable(),
  fileWorkspaceId: z.string().nullable(),
  fileExpiresAt: msOrNull,
  secretsVersion: z.number(),
});
export type CarriedAttempt = z.infer<typeof carriedAttemptSchema>;

/**
 * One delivery attempt; `attempt` (1-based, increasing across redeliveries) is part of the delivery id, so a re-run
 * of an attempt re-sends the same id. `carried` (added by the archiver's completion, its first attempt only) is what
 * that attempt would read (carriedAttemptSchema): the dispatcher uses it instead of reading while the job is fresh
 * (issue 12: one Postgres round trip less between a completion and its callback), and reads as before otherwise.
 */
export const CallbackDeliver = defineJob({
  queue: 'callbacks',
  name: 'callback.deliver',
  // v2: `carried`. A v1 payload (ids only) parses as one without it, and reads. v3: first attempts may travel as a
  // bundle (below); each payload is as in v2. A v2 dispatcher fails a bundle for good ("the payload (v3) does not
  // match"), and the reconciler adds its attempts again one each: roll dispatchers out before what completes tasks.
  version: 3,
  // Retries the dispatcher's own failures only; a receiver's failure is an attempt of the delivery schedule, each a job.
  retry: { attempts: 3, backoffMs: 1_000 },
  schema: z.object({ taskId: id, attempt, carried: carriedAttemptSchema.optional() }),
  key: (p) => [p.taskId, p.attempt],
  // The first attempts that completions made due together (an archiver's record group, a burst of finishes) travel
  // in one job, up to this many: per delivery the queue's add, take and completion, about half of what a delivery
  // cost all processes together (issue 12), are paid once per bundle. Each runs as its own attempt.
  bundle: 8,
});

export const FilesRetentionSweep = defineJob({
  queue: 'maintenance',
  name: 'files.retention-sweep',
  version: 1,
  schema: z.object({}),
});

/**
 * Gives back what requests that died left behind (every minute): billing holds past their expiry (an edge or worker
 * died between reserve and settle, whatever the route) and Idempotency-Key records past their 24 h.
 */
export const BillingReleaseExpired = defineJob({
  queue: 'maintenance',
  name: 'billing.release-expired',
  version: 1,
  schema: z.object({}),
});

export const jobs = { EvaluateRun, TaskSubmit, TaskPoll, TaskCancel, ArchiveOutput, CallbackDeliver, FilesRetentionSweep, BillingReleaseExpired } as const;

export type AnyJob = (typeof jobs)[keyof typeof jobs];
export type JobName = AnyJob['name'];
export type JobByName<N extends JobName> = Extract<AnyJob, { name: N }>;
export type JobsOnQueue<Q extends QueueName> = Extract<AnyJob, { queue: Q }>;
/** Job name to parsed payload, for code that switches on names (immich-style). */
export type JobPayloads = { [J in AnyJob as J['name']]: JobPayload<J> };

export const allJobs: readonly AnyJob[] = Object.values(jobs);

// Workers dispatch by name: two contracts under one name would route one's payloads to the other's handler.
for (const [i, job] of allJobs.entries()) {
  if (allJobs.findIndex((j) => j.name === job.name) !== i) throw new Error(`Job name "${job.name}" is declared twice.`);
}

export function jobsOnQueue<Q extends QueueName>(queue: Q): JobsOnQueue<Q>[] {
  return allJobs.filter((j): j is JobsOnQueue<Q> => j.queue === queue);
}

export function jobByName(name: string): AnyJob | undefined {
  return allJobs.find((j) => j.name === name);
}
