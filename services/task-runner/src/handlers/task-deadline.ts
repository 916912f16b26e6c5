// task.deadline: at the caller's deadline (deadline_seconds, Cancel-After) a task still live is canceled with
// deadline_exceeded: its hold released, the provider's job canceled, its callback sent and its waiter told (endTask).
// Idempotent with the task's own end, as every transition is one conditional UPDATE on the task row: a task whose
// result was recorded first is charged and left to complete, and one canceled first is never charged (recording a
// result needs a live task).
import { DEADLINE_EXCEEDED, type JobPayload, type TaskDeadline } from '@gensvc/contracts';
import { taskRepository, type TaskRow } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { HandlerContext } from '@gensvc/queue';
import { endTask, type TaskHandlerDeps } from './task-steps';

export type DeadlineOutcome =
  | { outcome: 'canceled' }
  | { outcome: 'skipped'; reason: 'task_gone' | 'no_deadline' | 'ended' };

/**
 * Cancels a task past its caller's deadline, unless it has ended or its result is recorded. The task.deadline job
 * and the reconciler's sweep of overdue tasks (its job lost with Redis) both end here.
 */
export async function cancelOverdue(
  deps: Pick<TaskHandlerDeps, 'db' | 'queues'>,
  task: Pick<TaskRow, 'id' | 'workspaceId' | 'createdAt' | 'cancelAfter'>,
  log: Logger,
): Promise<boolean> {
  const seconds = Math.round(((task.cancelAfter?.getTime() ?? 0) - task.createdAt.getTime()) / 1_000);
  const reason = { code: DEADLINE_EXCEEDED, message: `The task did not finish within its deadline of ${seconds} s.` };
  const canceled = await endTask(deps, task, { status: 'canceled', reason }, log, { cancelProviderJob: true });
  if (canceled) log.info({ taskId: task.id, deadlineSeconds: seconds }, 'task canceled at its deadline');
  return canceled;
}

export function taskDeadline(deps: TaskHandlerDeps) {
  return async (payload: JobPayload<typeof TaskDeadline>, ctx: HandlerContext): Promise<DeadlineOutcome> => {
    const task = await taskRepository.find(deps.db, payload.taskId);
    if (!task) return { outcome: 'skipped', reason: 'task_gone' };
    if (!task.cancelAfter) return { outcome: 'skipped', reason: 'no_deadline' };
    const log = deps.logger.child({ taskId: task.id, jobId: ctx.job.id });
    return (await cancelOverdue(deps, task, log)) ? { outcome: 'canceled' } : { outcome: 'skipped', reason: 'ended' };
  };
}
