// task.poll n: asks the provider once how the task's job is doing. Still running → the poll count moves to n + 1
// and poll n + 1 is added as a delayed job (no worker slot is held while it waits). Done → the output is recorded
// and the hold settled in one transaction, and each output goes to the archiver (recordTaskResult in libs/upstream,
// the one decider of a result, which the edge's provider-webhooks route calls too when a webhook carries it). Failed
// retryably → a new job (task-resubmit.ts), the hold kept; failed otherwise, or canceled at the provider → the task
// fails and its hold is released. Still running at the task's deadline →
// upstream_timeout, and the provider's job is canceled.
//
// A poll whose n is not the task's poll count is stale and does nothing, so however often a poll is re-added (a
// retry, the reconciler) one chain of polls lives per task.
import type { JobPayload, TaskPoll } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { scheduleArchives, taskJobRef, type HandlerContext } from '@gensvc/queue';
import { UpstreamFailure, isTransient, recordTaskResult, type JobState } from '@gensvc/upstream';
import { isTaskChannelKind } from '../providers/providers';
import { isRetryableJobFailure, resubmitOrFail, type EndedJob } from './task-resubmit';
import { deadlineOf, enqueuePoll, failTask, pastDeadline, upstreamUrlsOf, type TaskHandlerDeps } from './task-steps';

/** A job's return value is stored as JSON: micro-units travel as a decimal string. */
export type PollOutcome =
  | { outcome: 'running'; nextAttempt: number; delayMs: number }
  | { outcome: 'succeeded'; outputs: number; charged: string }
  | { outcome: 'failed'; code: string }
  | { outcome: 'resubmitted'; ended: number }
  | { outcome: 'stale'; reason: 'task_gone' | 'not_running' | 'other_attempt' | 'moved_on' };

export function taskPoll(deps: TaskHandlerDeps) {
  const { db, queues, catalog, providers, logger } = deps;

  return async (payload: JobPayload<typeof TaskPoll>, ctx: HandlerContext): Promise<PollOutcome> => {
    const task = await taskRepository.find(db, payload.taskId);
    if (!task) return { outcome: 'stale', reason: 'task_gone' };
    if (task.status !== 'running') return { outcome: 'stale', reason: 'not_running' };
    if (task.output !== null) {
      // A run of this poll that recorded the output may have died before handing every output to the archiver.
      await scheduleArchives(queues, taskJobRef(task), task.output, { recover: true });
      return { outcome: 'stale', reason: 'moved_on' };
    }
    if (task.attempts !== payload.attempt) {
      // A run of this poll that counted itself may have died before adding the next one.
      if (task.attempts === payload.attempt + 1) await enqueuePoll(deps, task, task.attempts, { ensure: true });
      return { outcome: 'stale', reason: 'other_attempt' };
    }
    const log = logger.child({ taskId: task.id, workspaceId: task.workspaceId, attempt: payload.attempt });
    const fail = async (code: string, message: string, cancelProviderJob = false): Promise<PollOutcome> => {
      const failed = await failTask(deps, task, { code, message }, log, { cancelProviderJob });
      return failed ? { outcome: 'failed', code } : { outcome: 'stale', reason: 'moved_on' };
    };

    const channel = task.channelId ? await catalog.channel(task.channelId) : null;
    if (!channel || !task.upstreamId || !isTaskChannelKind(channel.kind)) {
      return fail('upstream_error', 'The provider channel that ran the task is no longer configured.');
    }

    const retry = async (ended: EndedJob): Promise<PollOutcome> =>
      (await resubmitOrFail(deps, task, payload.attempt, channel, ended, log)) ?? {
        outcome: 'stale',
        reason: 'moved_on',
      };

    // Asked even at the deadline (the last poll is due then): a result that is there is taken, not timed out.
    let state: JobState;
    try {
      const call = {
        channel,
        upstreamId: task.upstreamId,
        urls: upstreamUrlsOf(task),
        signal: ctx.signal,
        ended: payload.ended === true || broughtForward(ctx.job),
      };
      state = await providers[channel.kind].status(call);
    } catch (e) {
      if (ctx.signal?.aborted || !(e instanceof UpstreamFailure)) throw e;
      if (e.kind === 'status' && e.status === 404)
        return retry({ status: 'lost', code: 'upstream_error', message: 'The provider no longer knows the job.' });
      if (!isTransient(e)) return fail('upstream_error', `The provider could not report on the job: ${e.message}`);
      // Unreachable, overloaded or garbled for now: ask again on schedule; the deadline bounds how long.
      log.warn({ channel: channel.name, err: e.message }, 'provider status unavailable; polling on');
      state = { state: 'running' };
    }

    switch (state.state) {
      case 'running': {
        if (pastDeadline(task))
          return fail('upstream_timeout', `The provider gave no result within ${deadlineOf(task)}.`, true);
        if (!(await taskRepository.advancePoll(db, task.id, payload.attempt)))
          return { outcome: 'stale', reason: 'moved_on' };
        const delayMs = await enqueuePoll(deps, task, payload.attempt + 1);
        log.debug({ delayMs }, 'task still running');
        return { outcome: 'running', nextAttempt: payload.attempt + 1, delayMs };
      }
      case 'succeeded': {
        // The one decider of a result, shared with the edge's provider-webhooks route (libs/upstream task-result.ts).
        const recorded = await recordTaskResult(deps, task, state.outputs, log);
        if (!recorded) return { outcome: 'stale', reason: 'moved_on' };
        return { outcome: 'succeeded', outputs: recorded.outputs, charged: recorded.charged.toString() };
      }
      case 'failed':
        if (isRetryableJobFailure(state.code))
          return retry({ status: 'failed', code: state.code, message: state.message });
        return fail(state.code, state.message);
      case 'canceled':
        // Not by us: our cancels follow a transition that ended the task, and this poll found it running.
        return fail('upstream_error', 'The provider canceled the job.');
    }
  };
}

/** A poll this much ahead of its due time was brought forward (more than replicas' clocks can differ by). */
const AHEAD_MS = 1_000;

/**
 * Whether this poll runs well before it was due: only a verified provider webhook brings a poll forward (the edge's
 * provider-webhooks route promotes a waiting one; one it adds says `ended`), and providers call theirs when the job
 * has ended. A poll due by its delay runs at or after timestamp + delay.
 */
function broughtForward(job: Pick<HandlerContext['job'], 'timestamp' | 'opts'>, now = Date.now()): boolean {
  return job.timestamp + (job.opts.delay ?? 0) - now > AHEAD_MS;
}
