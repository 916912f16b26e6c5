// The one place a provider's "the job succeeded, with these files" becomes the task's result. Two readers
// find it: the task-runner's poll (services/task-runner task-poll.ts, from the provider's status answer) and the
// edge's provider-webhooks route (from a verified webhook's body, which is the same answer); both hand it here, so the
// output's entries, the charge, the spend metric and the archive jobs are decided once.
import {
  TASK_OPERATIONS,
  isTaskOperation,
  pendingOutputEntry,
  type GenerationInput,
  type OutputKind,
  type TaskOutputEntry,
} from '@gensvc/contracts';
import { taskRepository, type Db, type TaskRow, type WebhookOutputInput, type WebhookOutputRecord } from '@gensvc/db';
import { recordSpend, type Logger, type Metrics } from '@gensvc/observability';
import { scheduleArchives, taskJobRef, type Queues } from '@gensvc/queue';
import type { ProviderOutput } from './provider';

export interface TaskResultDeps {
  db: Db;
  queues: Queues;
  /** Spend by model at each recorded result (the process's; tests may leave it out). */
  metrics?: Metrics;
}

/** recordWebhookResult's: the recorder of a webhook's result (the edge's groups it with those arriving meanwhile). */
export interface WebhookResultDeps extends TaskResultDeps {
  recordWebhookOutput: (input: WebhookOutputInput) => Promise<WebhookOutputRecord>;
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
): Promise<{ outputs: number; charged: bigint } | null> {
  const entries = outputEntries(task, outputs);
  const recorded = await taskRepository.recordOutput(deps.db, task.id, { outputs: entries }, task.reserved);
  if (!recorded) return null;
  await afterRecorded(deps, task, entries, recorded, log);
  return { outputs: entries.length, charged: recorded.charged };
}

/** What the provider signed a webhook for: its job id, at which provider, sent to the URL of task `taskId`. */
export interface WebhookJob {
  taskId: string;
  upstreamId: string;
  provider: string;
}

/**
 * A verified webhook's result (its job succeeded with `outputs`), recorded as recordTaskResult records a poll's, for
 * the task whose recorded provider job is the one the provider signed, of a channel of
 * that provider, running with no output yet. One Postgres statement does the checks and the recording
 * (taskRepository.recordWebhookOutputs, through the caller's grouped recorder, so no separate read per task): the
 * entries go in built for each kind the task may make, and the statement keeps its kind's. A video's entries need the
 * duration the task asked for when the provider does not say one (outputEntries), which only the row has: then the row
 * is read and the result recorded by recordTaskResult. 'recorded' or 'done' (this job's task had its result already, or
 * ended, or moved on meanwhile): the webhook is dealt with. 'not_this': not this job's task, or one still submitting.
 */
export async function recordWebhookResult(
  deps: WebhookResultDeps,
  job: WebhookJob,
  outputs: ProviderOutput[],
  log: Logger,
): Promise<'recorded' | 'done' | 'not_this'> {
  const byKind: Partial<Record<OutputKind, TaskOutputEntry[]>> = { image: entriesOf('image', outputs) };
  if (outputs.every((o) => o.duration !== undefined)) byKind.video = entriesOf('video', outputs);
  const input = {
    id: job.taskId,
    upstreamId: job.upstreamId,
    provider: job.provider,
    outputs: Object.fromEntries(Object.entries(byKind).map(([kind, entries]) => [kind, { outputs: entries }])),
  };
  const record = await deps.recordWebhookOutput(input);
  switch (record.outcome) {
    case 'recorded': {
      const entries = byKind[record.kind as OutputKind]!;
      await afterRecorded(deps, record.task, entries, record, log.child({ workspaceId: record.task.workspaceId }));
      return 'recorded';
    }
    case 'needs_row': {
      // Checked just now, and none of it changes once the task is running: its job id and channel are set at submit.
      const task = await taskRepository.find(deps.db, job.taskId);
      if (!task || task.upstreamId !== job.upstreamId) return 'not_this';
      const recorded = await recordTaskResult(deps, task, outputs, log.child({ workspaceId: task.workspaceId }));
      if (!recorded) log.info('provider webhook: the task moved on before its result was recorded');
      return recorded ? 'recorded' : 'done';
    }
    case 'moved_on':
      log.info('provider webhook: the task moved on before its result was recorded');
      return 'done';
    default:
      return record.outcome;
  }
}

/** A result just recorded (by this call): the log line, the spend metric, the archive jobs. */
async function afterRecorded(
  deps: TaskResultDeps,
  task: Pick<TaskRow, 'id' | 'workspaceId' | 'model'>,
  entries: TaskOutputEntry[],
  { charged }: { charged: bigint },
  log: Logger,
): Promise<void> {
  log.info({ outputs: entries.length, charged: charged.toString() }, 'task output recorded; archiving');
  if (deps.metrics) recordSpend(deps.metrics, { model: task.model, cost: charged });
  // Should a process die before they are added, the archiver's reconciler adds them for a running task whose outputs
  // wait (services/archiver reconciler.ts).
  await scheduleArchives(deps.queues, taskJobRef(task), { outputs: entries });
}

/**
 * Task.output entries (contracts task-output.ts): the kind the operation makes, the provider's URL and what it said
 * of the file, archive_status pending. A video's duration is the provider's, else the one asked for.
 */
function outputEntries(task: TaskRow, outputs: ProviderOutput[]): TaskOutputEntry[] {
  const kind = isTaskOperation(task.operation) ? TASK_OPERATIONS[task.operation].kind : 'image';
  return entriesOf(kind, outputs, (task.input as unknown as GenerationInput | null)?.duration_seconds);
}

/** outputEntries for a task of output `kind` that asked for a video of `requested` seconds (if it said). */
function entriesOf(kind: OutputKind, outputs: ProviderOutput[], requested?: number): TaskOutputEntry[] {
  return outputs.map(({ url, ...fields }) => {
    const duration = kind === 'video' ? (fields.duration ?? requested) : undefined;
    return pendingOutputEntry(kind, url, { ...fields, ...(duration !== undefined && { duration }) });
  });
}
