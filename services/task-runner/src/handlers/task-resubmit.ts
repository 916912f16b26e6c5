// Free retries: a task whose provider job ended for a retryable reason gets a new job, on another of the model's
// channels when it has one, up to TASK_MAX_RESUBMITS times; then it fails. The hold made at creation stays held across
// jobs: the job that succeeds settles it once (recordTaskResult), the final failure releases it (failTask).
//
// Retryable, as Replicate and fal answer (and upstream-sim plays them): a job that reports failure of the provider's
// own (a Replicate prediction `failed` with an error other than the content checker's; a fal result answering 5xx, or
// a queue status of ERROR other than a content refusal), and a lost job (the status or result endpoint answering 404
// for a job id it accepted). A 5xx, 429 or timeout at submission already fails over to the next channel and retries
// the submit job. Not retryable: a 4xx judging the input (fal's 422, Replicate's at creation), a content refusal, a
// cancel at the provider, the task's deadline. A status call answering 5xx or timing out says nothing about the job,
// which may still run: it is polled on (a new job would run the generation twice at the provider).
import { scheduleSubmit, taskJobRef } from '@gensvc/queue';
import { providerJobsOf, type ProviderJob } from '@gensvc/contracts';
import { taskRepository, type TaskRow } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { CatalogChannel, CatalogRoute } from '@gensvc/upstream';
import { isTaskChannelKind } from '../providers/providers';
import { failTask, upstreamUrlsOf, type TaskHandlerDeps } from './task-steps';

/** How a provider job ended that may deserve a new one. */
export interface EndedJob {
  status: ProviderJob['status'];
  code: string;
  message: string;
}

/** A failed job's failure code that another job may not repeat: the provider's own failure, not a judgment. */
export const isRetryableJobFailure = (code: string) => code === 'upstream_error';

export type ResubmitOutcome = { outcome: 'resubmitted'; ended: number } | { outcome: 'failed'; code: string } | null;

/**
 * Resubmits `task` whose job (found ended by poll `attempt`) may be retried, or fails it once its resubmits are spent.
 * Null when the task moved on meanwhile (another run of the poll decided): nothing is done then.
 */
export async function resubmitOrFail(
  deps: TaskHandlerDeps,
  task: TaskRow,
  attempt: number,
  channel: CatalogChannel,
  ended: EndedJob,
  log: Logger,
): Promise<ResubmitOutcome> {
  const upstreamId = task.upstreamId!;
  const previous = providerJobsOf(task.providerJobs).length;
  if (previous >= deps.config.tasks.maxResubmits) {
    const failed = await failTask(deps, task, { code: ended.code, message: ended.message }, log);
    return failed ? { outcome: 'failed', code: ended.code } : null;
  }
  const job: ProviderJob = {
    channel: channel.id,
    upstream_id: upstreamId,
    status: ended.status,
    error_code: ended.code,
    error_message: ended.message.slice(0, 500),
    started_at: task.startedAt?.toISOString() ?? null,
    ended_at: new Date().toISOString(),
  };
  const { maxResubmits } = deps.config.tasks;
  if (!(await taskRepository.resubmit(deps.db, task.id, { upstreamId, attempt, ended: job, maxResubmits })))
    return null;
  // Ensured: the task's first submit job (same id) has finished and must not swallow this one. A worker that dies
  // before this leaves the task queued, and the reconciler adds it.
  await scheduleSubmit(deps.queues, taskJobRef(task), { recover: true });
  log.warn(
    { channel: channel.name, upstreamId, code: ended.code, err: ended.message, resubmit: previous + 1 },
    'provider job ended retryably; resubmitted',
  );
  // The ended job's result, should it come late, names a job the task no longer holds and is ignored; stopping it
  // is best effort (a failed or lost job has nothing left to stop).
  if (isTaskChannelKind(channel.kind)) {
    await deps.providers[channel.kind]
      .cancel({ channel, upstreamId, urls: upstreamUrlsOf(task) })
      .catch((err: unknown) =>
        log.info({ err: err instanceof Error ? err.message : String(err) }, 'ended provider job not canceled'),
      );
  }
  return { outcome: 'resubmitted', ended: previous + 1 };
}

/**
 * The routes with the channels whose job failed for this task ranked below every other (withFailover tries higher
 * priority first), the most recently failed lowest: a resubmit goes to a channel not tried yet when the model has one,
 * else to the one that failed longest ago.
 */
export function freshChannelsFirst<R extends CatalogRoute>(routes: R[], task: Pick<TaskRow, 'providerJobs'>): R[] {
  const lastUse = new Map(providerJobsOf(task.providerJobs).map((j, i) => [j.channel, i]));
  if (lastUse.size === 0) return routes;
  const lowest = Math.min(...routes.map((r) => r.channel.priority));
  return routes.map((r) => {
    const used = lastUse.get(r.channel.id);
    return used === undefined ? r : { ...r, channel: { ...r.channel, priority: lowest - 1 - used } };
  });
}
