// task.cancel: stops the provider's job of a task that ended without it (the caller canceled it, or it ran past its
// deadline), so the provider stops spending on it. Best effort: the task's outcome and money were settled by the
// transition that ended it; a provider that cannot be reached is asked again by the job's retries, and one that
// answers the job is unknown or already over has nothing left to stop.
import type { JobPayload, TaskCancel } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import type { HandlerContext } from '@gensvc/queue';
import { isTaskChannelKind } from '../providers/providers';
import { upstreamUrlsOf, type TaskHandlerDeps } from './task-steps';

export type CancelOutcome =
  | { outcome: 'canceled'; upstreamId: string }
  | { outcome: 'skipped'; reason: 'task_gone' | 'not_ended' | 'not_submitted' | 'channel_gone' };

export function taskCancel(deps: TaskHandlerDeps) {
  const { db, catalog, providers, logger } = deps;

  return async (payload: JobPayload<typeof TaskCancel>, ctx: HandlerContext): Promise<CancelOutcome> => {
    const task = await taskRepository.find(db, payload.taskId);
    if (!task) return { outcome: 'skipped', reason: 'task_gone' };
    // Only a task that ended without its output has a provider job nobody wants; a live one is still being run.
    if (task.status !== 'canceled' && task.status !== 'failed') return { outcome: 'skipped', reason: 'not_ended' };
    // Canceled before it reached a provider: task.submit cancels the job it makes when markSubmitted finds this.
    if (!task.upstreamId) return { outcome: 'skipped', reason: 'not_submitted' };
    const channel = task.channelId ? await catalog.channel(task.channelId) : null;
    if (!channel || !isTaskChannelKind(channel.kind)) return { outcome: 'skipped', reason: 'channel_gone' };

    await providers[channel.kind].cancel({
      channel,
      upstreamId: task.upstreamId,
      urls: upstreamUrlsOf(task),
      signal: ctx.signal,
    });
    logger.info(
      { taskId: task.id, channel: channel.name, upstreamId: task.upstreamId, status: task.status },
      'provider job canceled',
    );
    return { outcome: 'canceled', upstreamId: task.upstreamId };
  };
}
