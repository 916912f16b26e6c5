// The one place a provider's "the job succeeded, with these files" becomes the task's result (issue 12). Two readers
// find it: the task-runner's poll (services/task-runner task-poll.ts, from the provider's status answer) and the
// edge's provider-webhooks route (from a verified webhook's body, which is the same answer); both hand it here, so the
// output's entries, the charge, the spend metric and the archive jobs are decided once.
import { TASK_OPERATIONS, isTaskOperation, pendingOutputEntry, type GenerationInput, type TaskOutputEntry } from '@gensvc/contracts';
import { taskRepository, type Db, type TaskRow } from '@gensvc/db';
import { recordSpend, type Logger, type Metrics } from '@gensvc/observability';
import { removePolls, scheduleArchives, taskJobRef, type Queues } from '@gensvc/queue';
import type { ProviderOutput } from './provider';

export interface TaskResultDeps {
  db: Db;
  queues: Queues;
  /** Spend by model at each recorded result (the process's; tests may leave it out). */
  metrics?: Metrics;
}

export interface TaskResultOptions {
  /**
   * The result came without the task's poll (a webhook): its waiting fallback poll is removed, in the same Redis
   * write as the archive jobs' adds. A process that dies before that write leaves the poll in place, and it finds
   * the result recorded and re-adds the archive jobs (task-poll.ts), as the archiver's reconciler would.
   */
  removeFallbackPoll?: boolean;
}

/**
 * Records `outputs` as the task's result and settles its hold (taskRepository.recordOutput: one statement, only for
 * a task still running with no output, so a second reader of the same result — a replayed webhook, a poll racing
 * the webhook — charges nothing and adds nothing), then adds an archive job per output. Null when the task had
 * moved on (canceled, failed, or its result recorded by the other reader).
 */
export async function recordTaskResult(
  deps: TaskResultDeps,
  task: TaskRow,
  outputs: ProviderOutput[],
  log: Logger,
  opts: TaskResultOptions = {},
): Promise<{ outputs: number; charged: bigint } | null> {
  const entries = outputEntries(task, outputs);
  const recorded = await taskRepository.recordOutput(deps.db, task.id, { outputs: entries }, task.reserved);
  if (!recorded) return null;
  log.info({ outputs: entries.length, charged: recorded.charged.toString() }, 'task output recorded; archiving');
  if (deps.metrics) recordSpend(deps.metrics, { model: task.model, cost: recorded.charged });
  const ref = taskJobRef(task);
  // One Redis write for both (one round trip). Should the removal land and the adds not, the archiver's reconciler
  // re-adds the archive jobs of a running task whose outputs wait (services/archiver reconciler.ts).
  await Promise.all([scheduleArchives(deps.queues, ref, { outputs: entries }), opts.removeFallbackPoll ? removePolls(deps.queues, ref, task.attempts) : undefined]);
  return { outputs: entries.length, charged: recorded.charged };
}

/**
 * Task.output entries (contracts task-output.ts): the kind the operation makes, the provider's URL and what it said
 * of the file, archive_status pending. A video's duration is the provider's, else the one asked for.
 */
function outputEntries(task: TaskRow, outputs: ProviderOutput[]): TaskOutputEntry[] {
  const kind = isTaskOperation(task.operation) ? TASK_OPERATIONS[task.operation].kind : 'image';
  const requested = (task.input as unknown as GenerationInput | null)?.duration_seconds;
  return outputs.map(({ url, ...fields }) => {
    const duration = kind === 'video' ? (fields.duration ?? requested) : undefined;
    return pendingOutputEntry(kind, url, { ...fields, ...(duration !== undefined && { duration }) });
  });
}
