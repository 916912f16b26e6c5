// Every job the system runs. Payloads carry ids and re-read their row (STYLE.md convention 2); evaluate is the
// one exception: it is synchronous for the caller and has no row, so the edge passes the request it validated.
import { z } from 'zod';
import { evaluateInputSchema } from './evaluate';
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
    /** The Redis channel of the edge process awaiting the answer: the worker publishes `{ id: <job id>, result }`. */
    replyTo: id,
  }),
});

/** Hands a queued task to a provider; the handler reads the task and does nothing unless it is still queued. */
export const TaskSubmit = defineJob({
  queue: 'tasks',
  name: 'task.submit',
  // v3: ids only again (v2 carried the created row).
  version: 3,
  retry: { attempts: 5, backoffMs: 1_000 },
  schema: z.object({ taskId: id }),
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
 * The caller's deadline of a task (deadline_seconds, Cancel-After), added delayed with its submit: a task still live
 * when it runs is canceled with deadline_exceeded. The handler re-reads the task and does nothing to a finished one.
 */
export const TaskDeadline = defineJob({
  queue: 'tasks',
  name: 'task.deadline',
  version: 1,
  retry: { attempts: 5, backoffMs: 1_000 },
  schema: z.object({ taskId: id }),
  key: (p) => [p.taskId],
});

/** Copies output `outputIndex` of a task into S3; the archiver reads the task's output and workspace. */
export const ArchiveOutput = defineJob({
  queue: 'archive',
  name: 'archive.output',
  // v3: ids only again (v2 carried the output's source and the workspace's retention).
  version: 3,
  retry: { attempts: 5, backoffMs: 2_000 },
  schema: z.object({ taskId: id, outputIndex: z.number().int().min(0) }),
  key: (p) => [p.taskId, p.outputIndex],
});

/**
 * One delivery attempt; `attempt` (1-based, increasing across redeliveries) is part of the delivery id, so a re-run
 * of an attempt re-sends the same id.
 */
export const CallbackDeliver = defineJob({
  queue: 'callbacks',
  name: 'callback.deliver',
  // v4: ids only, one attempt per job (v2 and v3 carried the attempt's context).
  version: 4,
  // Retries the dispatcher's own failures only; a receiver's failure is an attempt of the delivery schedule (a job).
  retry: { attempts: 3, backoffMs: 1_000 },
  schema: z.object({ taskId: id, attempt }),
  key: (p) => [p.taskId, p.attempt],
});

/**
 * One mail: an invitation's link to its address, or a password-reset link to its account's. The payload names the row
 * only; the handler re-reads it and sends nothing for a row that is gone, used, expired or superseded (a resend).
 * `send` is the row's send count when the job was made, so each resend is a job of its own.
 */
export const MailSend = defineJob({
  queue: 'mail',
  name: 'mail.send',
  version: 1,
  // An SMTP server briefly away or refusing for now (4xx): 2 s, 4 s, 8 s, ... about 17 minutes in all.
  retry: { attempts: 10, backoffMs: 2_000 },
  schema: z.object({
    kind: z.enum(['invitation', 'password-reset']),
    id,
    send: z.number().int().min(1),
  }),
  key: (p) => [p.kind, p.id, p.send],
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

export const jobs = {
  EvaluateRun,
  TaskSubmit,
  TaskPoll,
  TaskCancel,
  TaskDeadline,
  ArchiveOutput,
  CallbackDeliver,
  MailSend,
  FilesRetentionSweep,
  BillingReleaseExpired,
} as const;

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
