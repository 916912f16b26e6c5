// What the task handlers share: their dependencies, the jobs that follow a transition, and the poll timing.
//
// Every job that follows a transition is added after the transition committed (STYLE.md convention 8), under its
// deterministic id. A worker that dies between the two leaves the row ahead of the queue; the reconciler finds the
// row unmoved and re-adds the job, and the job's handler re-checks the row, so nothing runs twice.
import type { Config } from '@gensvc/config';
import { taskRepository, type Db, type TaskFailure, type TaskRow } from '@gensvc/db';
import type { Logger, Metrics } from '@gensvc/observability';
import {
  publishTaskFinished,
  scheduleCallback,
  scheduleCancel,
  schedulePoll,
  taskJobRef,
  traceQueryOf,
  type Queues,
} from '@gensvc/queue';
import type { Catalog, CircuitBreaker } from '@gensvc/upstream';
import type { TaskProviders } from '../providers/providers';

export interface TaskHandlerDeps {
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret' | 'tasks' | 'providerWebhooks'>;
  db: Db;
  queues: Queues;
  catalog: Catalog;
  /** Per process: every job of this worker shares what it learns about the channels. */
  breaker: CircuitBreaker;
  providers: TaskProviders;
  logger: Logger;
  /** Spend by model at each recorded result (main.ts passes the process's; tests may leave it out). */
  metrics?: Metrics;
}

type TaskRef = Pick<TaskRow, 'id' | 'workspaceId'>;

/**
 * Fails a live task that has no output yet, giving its hold back, and adds what follows: the callback when one is
 * due, and the provider's cancel when the provider still has the job and `cancelProviderJob` says so. False when
 * the task had already moved on (canceled meanwhile, or its output recorded): nothing is added then.
 */
export async function failTask(
  deps: Pick<TaskHandlerDeps, 'db' | 'queues'>,
  task: TaskRef,
  failure: TaskFailure,
  log: Logger,
  opts: { cancelProviderJob?: boolean } = {},
): Promise<boolean> {
  const ended = await endTask(deps, task, { status: 'failed', failure }, log, opts);
  if (ended) log.info({ code: failure.code, message: failure.message }, 'task failed');
  else log.info({ code: failure.code }, 'task already moved on; not failed');
  return ended;
}

/**
 * Ends a live task that has no output yet (failed, or canceled with a reason), giving its hold back, and adds what
 * follows: the provider's cancel when asked and the provider has the job, the callback when one is due, and the
 * task-finished notice for a caller waiting on it. False when the task had already moved on (ended meanwhile, or its
 * output recorded: the success won and is charged): nothing is added then.
 */
export async function endTask(
  deps: Pick<TaskHandlerDeps, 'db' | 'queues'>,
  task: TaskRef,
  how: Parameters<typeof taskRepository.finish>[2],
  log: Logger,
  opts: { cancelProviderJob?: boolean } = {},
): Promise<boolean> {
  const done = await taskRepository.finish(deps.db, task.id, how);
  if (!done) return false;
  // The provider's job of a task that ended without it: best effort, retried by its job.
  if (opts.cancelProviderJob && done.upstreamId) await scheduleCancel(deps.queues, taskJobRef(task), { recover: true });
  if (done.callback) await scheduleCallback(deps.queues, taskJobRef(task), done.callbackRoundStart, { first: true });
  // One Redis round trip per ended task: the only way a caller waiting on it (Prefer: wait) hears of the end.
  await publishTaskFinished(deps.queues.connection, deps.queues.prefix, task.id, log);
  return true;
}

/**
 * Adds poll `attempt` of a task, due after the schedule's wait for it (the n-th poll waits the n-th value, the last
 * repeats) but never after the deadline, so a stuck job times out at its deadline rather than a poll later. A
 * delayed job holds no worker slot while it waits.
 */
export async function enqueuePoll(
  deps: Pick<TaskHandlerDeps, 'config' | 'queues'>,
  task: Pick<TaskRow, 'id' | 'workspaceId' | 'deadlineAt'>,
  attempt: number,
  opts: { ensure?: boolean; now?: number } = {},
): Promise<number> {
  const delay = pollDelay(deps.config.tasks.pollScheduleMs, task, attempt, opts.now);
  // ensure: for re-runs, where a finished job of that id (a poll that failed for good) must not swallow this one.
  await schedulePoll(deps.queues, taskJobRef(task), attempt, delay, { recover: opts.ensure });
  return delay;
}

/** The wait before poll `attempt`: the n-th value of the schedule (the last repeats), never past the deadline. */
function pollDelay(
  schedule: readonly number[],
  task: Pick<TaskRow, 'deadlineAt'>,
  attempt: number,
  now = Date.now(),
): number {
  const wait = schedule[Math.min(attempt - 1, schedule.length - 1)] ?? 1_000;
  return task.deadlineAt ? Math.max(0, Math.min(wait, task.deadlineAt.getTime() - now)) : wait;
}

/**
 * Where a provider of this kind should POST when the task's job ends (the edge's signed inbound route), with the
 * task's trace in its query when one is active (traceQueryOf: the edge records the webhook in it), or undefined when
 * provider webhooks are off (no PROVIDER_WEBHOOK_BASE_URL) or this provider's cannot be verified (Replicate without
 * REPLICATE_WEBHOOK_SECRET, fal without FAL_WEBHOOK_USER_ID).
 */
export function webhookUrlFor(
  config: Pick<Config, 'providerWebhooks'>,
  kind: 'replicate' | 'fal',
  taskId: string,
): string | undefined {
  const { baseUrl, replicateSecret, falUserId } = config.providerWebhooks;
  if (baseUrl === undefined || (kind === 'replicate' ? replicateSecret : falUserId) === undefined) return undefined;
  const trace = traceQueryOf();
  return `${baseUrl}/v1/provider-webhooks/${kind}/${encodeURIComponent(taskId)}${trace && `?${trace}`}`;
}

/** The provider URLs recorded at submission (a JSON object of strings), or null. */
export function upstreamUrlsOf(task: Pick<TaskRow, 'upstreamUrls'>): Record<string, string> | null {
  const json = task.upstreamUrls;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return null;
  return Object.fromEntries(Object.entries(json).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** Whether this run of the job is its last: a failure now would not be retried. */

/** "30 minutes", "90 s", "250 ms": a deadline as people read it. */
function describeMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  if (ms >= 1_000 && ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/** The task's own deadline, as a length of time from its creation. */
export const deadlineOf = (task: Pick<TaskRow, 'createdAt' | 'deadlineAt'>) =>
  describeMs((task.deadlineAt?.getTime() ?? task.createdAt.getTime()) - task.createdAt.getTime());

export const pastDeadline = (task: Pick<TaskRow, 'deadlineAt'>, now = Date.now()) =>
  task.deadlineAt !== null && now >= task.deadlineAt.getTime();
