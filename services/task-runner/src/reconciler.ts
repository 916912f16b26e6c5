// Postgres is the truth; Redis only carries the next step. The task-runner's reconciler recovers the steps the
// task-runner owns: a queued task gets its task.submit, a running task without the provider's result gets its next
// task.poll, when they have not moved for a while (Redis flushed or restarted, a worker killed between a transition
// and its job, or a job that failed for good while its row still waits). The archiver recovers archives and
// completions (services/archiver/src/reconciler.ts), the dispatcher deliveries (services/callback-dispatcher/src/
// reconciler.ts). Every job has a deterministic id and every handler re-reads its row and checks it is still due,
// so re-adding a job that exists, or one whose step already happened, does nothing.
import { taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { schedulePoll, scheduleSubmit, startReconcileSweeper, taskJobRef, type Queues, type ReconcilerBaseDeps, type Sweeper } from '@gensvc/queue';

export interface ReconcilerDeps extends ReconcilerBaseDeps {
  db: Db;
  queues: Queues;
  logger: Logger;
}

export interface ReconcileReport {
  tasks: number;
  /** Jobs that were missing (or finished while their row still waited) and were added again. */
  readded: number;
}

export type Reconciler = Sweeper<ReconcileReport>;

export function startReconciler(deps: ReconcilerDeps, opts: { autorun?: boolean } = {}): Reconciler {
  const { db, queues, logger } = deps;
  return startReconcileSweeper('task-runner', deps, async ({ now, staleBefore, batch }): Promise<ReconcileReport> => {
    const stale = await taskRepository.staleInProvider(db, staleBefore, batch);
    let readded = 0;
    for (const task of stale) {
      const outcome =
        task.status === 'queued'
          ? await scheduleSubmit(queues, taskJobRef(task), { recover: true })
          : // The poll the task's count says is next, due now: the task has waited longer than any poll already.
            await schedulePoll(queues, taskJobRef(task), task.attempts, 0, { recover: true });
      if (outcome !== 'exists' && outcome !== 'promoted') readded++;
      await taskRepository.touch(db, task.id, now);
    }
    const report = { tasks: stale.length, readded };
    if (readded > 0) logger.warn(report, 'reconciler: re-added submit and poll jobs that had vanished');
    return report;
  }, opts);
}
