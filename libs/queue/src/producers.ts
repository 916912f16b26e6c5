// The named producers: the only place the pipeline's jobs are made (STYLE.md: one place schedules each kind of job).
// Each job's id comes from its contract's `key`, so a producer re-run (a retried handler, a reconciler) adds nothing
// twice. Every producer is called after the transition that made the job due has committed (STYLE.md convention 8);
// a process that dies in between leaves the row ahead of the queue, and the owning service's reconciler calls the
// same producer with `recover: true`.
//
// Why here, in libs/queue: every service that makes a follow-up job already depends on it, and a producer needs no
// more than the contracts and enqueue; a lib of its own would be one more package for five functions.
import {
  ArchiveOutput,
  CallbackDeliver,
  EvaluateRun,
  MailSend,
  TaskCancel,
  TaskDeadline,
  TaskPoll,
  TaskSubmit,
  pendingOutputIndexes,
  type JobInput,
  type JobPayload,
} from '@gensvc/contracts';
import { ensureJob, type EnsureJobOutcome } from './ensure-job';
import { enqueue, type Queues } from './queues';

/** The envelope of a task's jobs: the task, its workspace and, when a request made the job due, that request. */
export interface TaskJobRef {
  taskId: string;
  workspaceId: string;
  requestId?: string;
}

export interface ScheduleOptions {
  /**
   * A re-run or a reconciler: a finished job of the same id (one that failed for good, or ran before its step was
   * undone) is replaced rather than kept (ensureJob), at the cost of one more Redis round trip. Without it a plain
   * add, which keeps an existing job of that id.
   */
  recover?: boolean;
}

const envelope = (ref: TaskJobRef) => ({
  taskId: ref.taskId,
  workspaceId: ref.workspaceId,
  ...(ref.requestId ? { requestId: ref.requestId } : {}),
});

/** The envelope of a task row's jobs (its id and workspace), with the request that made them due when there is one. */
export const taskJobRef = (task: { id: string; workspaceId: string }, requestId?: string): TaskJobRef =>
  envelope({ taskId: task.id, workspaceId: task.workspaceId, requestId });

async function add<
  J extends
    | typeof TaskSubmit
    | typeof TaskPoll
    | typeof TaskCancel
    | typeof TaskDeadline
    | typeof ArchiveOutput
    | typeof CallbackDeliver,
>(
  queues: Queues,
  contract: J,
  payload: JobInput<J>,
  opts: ScheduleOptions & { delay?: number; promote?: boolean; removeOnComplete?: true },
): Promise<EnsureJobOutcome> {
  const jobOpts = {
    ...(opts.delay !== undefined && { delay: opts.delay }),
    ...(opts.removeOnComplete && { removeOnComplete: true }),
  };
  if (opts.recover || opts.promote) return ensureJob(queues, contract, payload, { ...jobOpts, promote: opts.promote });
  await enqueue(queues, contract, payload, jobOpts);
  return 'added';
}

/** task.submit of a queued task (the edge at creation; the task-runner's reconciler for one whose job vanished). */
export function scheduleSubmit(queues: Queues, ref: TaskJobRef, opts: ScheduleOptions = {}): Promise<EnsureJobOutcome> {
  return add(queues, TaskSubmit, envelope(ref), opts);
}

/** Poll `attempt` of a running task, due in `delayMs` (the task-runner decides the wait). */
export function schedulePoll(
  queues: Queues,
  ref: TaskJobRef,
  attempt: number,
  delayMs: number,
  opts: ScheduleOptions = {},
): Promise<EnsureJobOutcome> {
  return add(queues, TaskPoll, { ...envelope(ref), attempt }, { ...opts, delay: delayMs });
}

/**
 * Poll `attempt` of a running task, now, because a verified provider webhook said its job ended without carrying a
 * result we record (a failure, a cancel, a body we cannot read): added with `ended` (TaskPoll), or, when that poll
 * waits delayed, promoted; a poll of that id running or due already is left as it is, and a finished one is replaced.
 */
export function scheduleEndedPoll(queues: Queues, ref: TaskJobRef, attempt: number): Promise<EnsureJobOutcome> {
  return add(queues, TaskPoll, { ...envelope(ref), attempt, ended: true }, { promote: true });
}

/** Cancels the provider's job of a task that ended without it (a cancel, a deadline). */
export function scheduleCancel(queues: Queues, ref: TaskJobRef, opts: ScheduleOptions = {}): Promise<EnsureJobOutcome> {
  return add(queues, TaskCancel, envelope(ref), opts);
}

/**
 * The caller's deadline of a task, due in `delayMs` (the edge at creation, beside its submit). Delayed in Redis, it
 * outlives any process; a Redis that loses it is covered by the task-runner's reconciler, which cancels overdue tasks.
 */
export function scheduleDeadline(
  queues: Queues,
  ref: TaskJobRef,
  delayMs: number,
  opts: ScheduleOptions = {},
): Promise<EnsureJobOutcome> {
  return add(queues, TaskDeadline, envelope(ref), { ...opts, delay: delayMs });
}

/** Copies output `outputIndex` of a task into S3 (the archiver). */
export function scheduleArchive(
  queues: Queues,
  ref: TaskJobRef,
  outputIndex: number,
  opts: ScheduleOptions = {},
): Promise<EnsureJobOutcome> {
  return add(queues, ArchiveOutput, { ...envelope(ref), outputIndex }, opts);
}

/**
 * An archive job for every output of `output` (a stored Task.output) still pending archive: the task runner at the
 * provider's result (its poll, or the edge's provider-webhooks route: recordTaskResult in libs/upstream), the
 * archiver's reconciler for one whose jobs vanished. Answers the outcome per pending output,
 * so none pending means the archiver has dealt with all of them.
 */
export function scheduleArchives(
  queues: Queues,
  ref: TaskJobRef,
  output: unknown,
  opts: ScheduleOptions = {},
): Promise<EnsureJobOutcome[]> {
  const pending = pendingOutputIndexes(output);
  return Promise.all(pending.map((outputIndex) => scheduleArchive(queues, ref, outputIndex, opts)));
}

/**
 * Delivery attempt `attempt` of a task's callback, due in `delayMs` (0: now). Ensured unless `first`: an attempt
 * number is re-used when a dispatcher died before recording it, and a finished job of that id must not swallow the
 * re-send. `first`: the first attempt of a task's first round, scheduled by the one transition that finished the
 * task (recordArchive's completion, finish): no job of that id can exist before it, so a plain add (one round trip,
 * no look-up) does. `promote`: a delayed job of that id runs now (a redelivery asked for now, not in an hour).
 *
 * A completed attempt's job is removed by the script that completes it, as evaluate.run's is: the attempt's row in
 * Postgres is its record, and nothing reads the job. Kept, it cost Redis a ZADD, the outcome's HSET and, once the
 * completed set held its 10,000, the removal of an older job in every completion, and an hour of jobs in memory.
 * The key still makes a second add a no-op while the job waits or runs; an add of an attempt already made (a re-run)
 * finds its row and sends nothing. A failed job (a broken dispatcher) is kept as any job's.
 */
export function scheduleCallback(
  queues: Queues,
  ref: TaskJobRef,
  attempt: number,
  opts: { delayMs?: number; promote?: boolean; first?: boolean } = {},
): Promise<EnsureJobOutcome> {
  return add(
    queues,
    CallbackDeliver,
    { ...envelope(ref), attempt },
    {
      recover: !opts.first,
      promote: opts.promote,
      removeOnComplete: true,
      ...(opts.delayMs ? { delay: opts.delayMs } : {}),
    },
  );
}

/**
 * One evaluation, run once (a retry after an upstream call could pay the provider twice; failover happens inside
 * the job), keyed by the edge's call id. Its result travels on the edge's reply channel, not in the job, so a
 * completed job is removed in the script that completes it: nothing reads it, and kept it cost Redis a ZADD, the
 * result's HSET and the age sweep's removal of an older job in every completion, and held each job's payload for a
 * minute. The key still makes a second add a no-op while the job waits or runs; the edge adds each call id once,
 * and a reply nobody waits for any more is charged by nobody. A failed job (a broken worker) is kept as any job's.
 */
export function scheduleEvaluate(queues: Queues, payload: JobPayload<typeof EvaluateRun>) {
  // The edge builds the payload from the request it parsed and ids it made: not re-checked here (the worker parses it).
  return enqueue(queues, EvaluateRun, payload, { attempts: 1, removeOnComplete: true }, 'parsed');
}

/**
 * One mail (an invitation's link, a password-reset link), after its row committed. The row is its record: the
 * completed job is removed at once; the key makes a second add of the same send a no-op while the job waits.
 */
export async function scheduleMail(
  queues: Queues,
  mail: Pick<JobInput<typeof MailSend>, 'kind' | 'id' | 'send' | 'workspaceId' | 'requestId'>,
): Promise<void> {
  await enqueue(queues, MailSend, mail, { removeOnComplete: true });
}
