// The named producers: the only place the pipeline's jobs are made (STYLE.md: one place schedules each kind of job).
// Each job's id comes from its contract's `key`, so a producer re-run (a retried handler, a reconciler) adds nothing
// twice. Every producer is called after the transition that made the job due has committed (STYLE.md convention 8);
// a process that dies in between leaves the row ahead of the queue, and the owning service's reconciler calls the
// same producer with `recover: true`.
//
// Why here, in libs/queue: every service that makes a follow-up job already depends on it, and a producer needs no
// more than the contracts and enqueue; a lib of its own would be one more package for five functions.
import { ArchiveOutput, CallbackDeliver, EvaluateRun, TaskCancel, TaskPoll, TaskSubmit, outputEntriesOf, pendingOutputIndexes, type CarriedAttempt, type CarriedSubmit, type JobInput, type JobPayload } from '@gensvc/contracts';
import { enqueueBundled } from './bundles';
import { coalesceWrites } from './connection';
import { ensureJob, type EnsureJobOutcome } from './ensure-job';
import { enqueue, jobIdOf, type Queues } from './queues';

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

const envelope = (ref: TaskJobRef) => ({ taskId: ref.taskId, workspaceId: ref.workspaceId, ...(ref.requestId ? { requestId: ref.requestId } : {}) });

/** The envelope of a task row's jobs (its id and workspace), with the request that made them due when there is one. */
export const taskJobRef = (task: { id: string; workspaceId: string }, requestId?: string): TaskJobRef => envelope({ taskId: task.id, workspaceId: task.workspaceId, requestId });

async function add<J extends typeof TaskSubmit | typeof TaskPoll | typeof TaskCancel | typeof ArchiveOutput | typeof CallbackDeliver>(
  queues: Queues,
  contract: J,
  payload: JobInput<J>,
  opts: ScheduleOptions & { delay?: number; promote?: boolean; removeOnComplete?: true; atOnce?: true },
): Promise<EnsureJobOutcome> {
  const jobOpts = { ...(opts.delay !== undefined && { delay: opts.delay }), ...(opts.removeOnComplete && { removeOnComplete: true }) };
  // Whatever else this process sends on the connection in this turn (other jobs' adds and completions, which BullMQ
  // sends on the same connection) leaves in the same socket write: a write costs more CPU here than the script it
  // carries. Except a job someone is waiting for (`atOnce`: a callback due now), written at once: on a busy process
  // the turn ends milliseconds later (the archiver's completion → callback add waited 2-4 ms p50, 12-17 p90 under
  // bench/tasks, measured between the completion's answer and the turn's end).
  if (!opts.atOnce) coalesceWrites(queues.connection);
  if (opts.recover || opts.promote) return ensureJob(queues, contract, payload, { ...jobOpts, promote: opts.promote });
  // A contract that bundles (callback.deliver): the plain adds of one burst travel together (bundles.ts). Its plain
  // add is a task's first attempt, which no job of that id precedes, as enqueueBundled requires.
  await (contract.bundle ? enqueueBundled(queues, contract, payload, jobOpts) : enqueue(queues, contract, payload, jobOpts));
  return 'added';
}

/** The columns of a task row its submit reads (TaskSubmit's `carried`), as the creation wrote them: times as Dates. */
export type CreatedTask = Omit<CarriedSubmit, 'createdAt' | 'deadlineAt'> & { createdAt: Date; deadlineAt: Date | null };

/**
 * task.submit of a queued task (the edge at creation; the task-runner's reconciler for one whose job vanished).
 * `created`: the row the creation just wrote, which the job carries (TaskSubmit `carried`), so its first run submits
 * without reading it.
 */
export function scheduleSubmit(queues: Queues, ref: TaskJobRef, opts: ScheduleOptions & { created?: CreatedTask } = {}): Promise<EnsureJobOutcome> {
  const { created, ...rest } = opts;
  const carried: CarriedSubmit | undefined = created && {
    status: created.status,
    attempts: created.attempts,
    model: created.model,
    operation: created.operation,
    input: created.input,
    createdAt: created.createdAt.getTime(),
    deadlineAt: created.deadlineAt?.getTime() ?? null,
  };
  return add(queues, TaskSubmit, { ...envelope(ref), ...(carried && { carried }) }, rest);
}

/** Poll `attempt` of a running task, due in `delayMs` (the task-runner decides the wait). */
export function schedulePoll(queues: Queues, ref: TaskJobRef, attempt: number, delayMs: number, opts: ScheduleOptions = {}): Promise<EnsureJobOutcome> {
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

/** What an archive job may carry of its output (ArchiveOutput's `source`). */
export type ArchiveSource = NonNullable<JobPayload<typeof ArchiveOutput>['source']>;

/** Copies output `outputIndex` of a task into S3 (the archiver), with what it copies when the caller has it. */
export function scheduleArchive(queues: Queues, ref: TaskJobRef, outputIndex: number, opts: ScheduleOptions & { source?: ArchiveSource } = {}): Promise<EnsureJobOutcome> {
  const { source, ...rest } = opts;
  return add(queues, ArchiveOutput, { ...envelope(ref), outputIndex, ...(source && { source }) }, rest);
}

/**
 * An archive job for every output of `output` (a stored Task.output) still pending archive: the task runner at the
 * provider's result (its poll, or the edge's provider-webhooks route: recordTaskResult in libs/upstream), the
 * archiver's reconciler for one whose jobs vanished. Answers the outcome per pending output,
 * so none pending means the archiver has dealt with all of them. `retention`: the workspace's, read by the
 * transition that recorded `output`; each job then carries its source (ArchiveOutput v2), else the archiver reads it.
 */
export function scheduleArchives(
  queues: Queues,
  ref: TaskJobRef,
  output: unknown,
  opts: ScheduleOptions & { retention?: Pick<ArchiveSource, 'tier' | 'retentionDays'> } = {},
): Promise<EnsureJobOutcome[]> {
  const { retention, ...rest } = opts;
  // All at once: the adds of one task's outputs (distinct ids) leave in one socket write, one round trip in all.
  const entries = outputEntriesOf(output);
  return Promise.all(
    pendingOutputIndexes(output).map((outputIndex) => {
      const { url, kind } = entries[outputIndex]!;
      return scheduleArchive(queues, ref, outputIndex, { ...rest, ...(retention && { source: { url, kind, ...retention } }) });
    }),
  );
}

/**
 * Delivery attempt `attempt` of a task's callback, due in `delayMs` (0: now). Ensured unless `first`: an attempt
 * number is re-used when a dispatcher died before recording it, and a finished job of that id must not swallow the
 * re-send. `first`: the first attempt of a task's first round, scheduled by the one transition that finished the
 * task (recordArchive's completion, finish): no job of that id can exist before it, so a plain add (one round trip,
 * no look-up) does. `promote`: a delayed job of that id runs now (a redelivery asked for now, not in an hour).
 * `carried`: what the first attempt would read, as the completion left it (CallbackDeliver's `carried`).
 *
 * A completed attempt's job is removed by the script that completes it, as evaluate.run's is: the attempt's row in
 * Postgres is its record, and nothing reads the job. Kept, it cost Redis a ZADD, the outcome's HSET and, once the
 * completed set held its 10,000, the removal of an older job in every completion, and an hour of jobs in memory.
 * The key still makes a second add a no-op while the job waits or runs; an add of an attempt already made (a re-run)
 * finds its row and sends nothing. A failed job (a broken dispatcher) is kept as any job's.
 *
 * First attempts made in one burst (the tasks an archiver's record group completed together) travel as bundles of up
 * to CallbackDeliver's `bundle` (bundles.ts), each attempt still run, logged and traced as its own. A bundle's id is
 * not its attempts' own: a reconciler that finds a delivery stalled while its bundle still waits (a backlog older than
 * its staleness) adds the attempt alone too, and whichever runs second finds it recorded, or, side by side, both send
 * it under the same delivery id.
 */
export function scheduleCallback(
  queues: Queues,
  ref: TaskJobRef,
  attempt: number,
  opts: { delayMs?: number; promote?: boolean; first?: boolean; carried?: CarriedAttempt } = {},
): Promise<EnsureJobOutcome> {
  return add(queues, CallbackDeliver, { ...envelope(ref), attempt, ...(opts.carried && { carried: opts.carried }) }, { recover: !opts.first, promote: opts.promote, removeOnComplete: true, ...(opts.delayMs ? { delay: opts.delayMs } : { atOnce: true }) });
}

/**
 * One evaluation, run once (a retry after an upstream call could pay the provider twice; failover happens inside
 * the job), keyed by the edge's call id. Its result travels on the edge's reply channel, not in the job, so a
 * completed job is removed in the script that completes it: nothing reads it, and kept it cost Redis a ZADD, the
 * result's HSET and the age sweep's removal of an older job in every completion, and held each job's payload for a
 * minute. The key still makes a second add a no-op while the job waits or runs; the edge adds each call id once,
 * and a reply nobody waits for any more is charged by nobody. A failed job (a broken worker) is kept as any job's.
 * The adds of callers served in the same turn of the event loop leave in one socket write (coalesceWrites).
 */
export function scheduleEvaluate(queues: Queues, payload: JobPayload<typeof EvaluateRun>) {
  coalesceWrites(queues.connection);
  // The edge builds the payload from the request it parsed and ids it made: not re-checked here (the worker parses it).
  return enqueue(queues, EvaluateRun, payload, { attempts: 1, removeOnComplete: true }, 'parsed');
}
