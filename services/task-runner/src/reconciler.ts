// Postgres is the truth; Redis only carries the next step. The task-runner's reconciler recovers the steps the
// task-runner owns: a queued task gets its task.submit, a running task without the provider's result gets its next
// task.poll, when they have not moved for a while (Redis flushed or restarted, a worker killed between a transition
// and its job, or a job that failed for good while its row still waits). It is also the provider webhooks' fallback:
// a task whose provider was asked for a webhook has no poll, and once it has waited
// TASK_POLL_WEBHOOK_FALLBACK unmoved (its webhook lost: the edge down, the provider giving up) it is polled from here,
// and on the poll schedule after that; a task past its deadline is polled at once, and the poll times it out. The
// archiver recovers archives and completions (services/archiver/src/reconciler.ts), the dispatcher deliveries
// (services/callback-dispatcher/src/reconciler.ts). A live task past its caller's deadline (its task.deadline job lost
// with Redis) is canceled here. Every job has a deterministic id and every handler re-reads its
// row and checks it is still due, so re-adding a job that exists, or one whose step already happened, does nothing.
import type { Config } from '@gensvc/config';
import { taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import {
  schedulePoll,
  scheduleSubmit,
  startReconcileSweeper,
  taskJobRef,
  type Queues,
  type ReconcilerBaseDeps,
  type Sweeper,
} from '@gensvc/queue';
import { cancelOverdue } from './handlers/task-deadline';

export interface ReconcilerDeps extends ReconcilerBaseDeps {
  config: ReconcilerBaseDeps['config'] & Pick<Config, 'providerWebhooks'>;
  db: Db;
  queues: Queues;
  logger: Logger;
}

interface ReconcileReport {
  tasks: number;
  /** Jobs that were missing (or finished while their row still waited) and were added again. */
  readded: number;
  /** Tasks canceled here past their caller's deadline. */
  overdue: number;
}

export type Reconciler = Sweeper<ReconcileReport>;

export function startReconciler(deps: ReconcilerDeps, opts: { autorun?: boolean } = {}): Reconciler {
  const { db, queues, logger } = deps;
  return startReconcileSweeper(
    'task-runner',
    deps,
    async ({ now, staleBefore, batch }): Promise<ReconcileReport> => {
      // A running task waits for its webhook this long before it is polled (never less than any task waits here).
      const { baseUrl, fallbackPollMs } = deps.config.providerWebhooks;
      const running =
        baseUrl === undefined ? staleBefore : new Date(Math.min(staleBefore.getTime(), now.getTime() - fallbackPollMs));
      const stale = await taskRepository.staleInProvider(db, { queued: staleBefore, running, now }, batch);
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
      let overdue = 0;
      for (const task of await taskRepository.overdue(db, now, batch)) {
        if (await cancelOverdue(deps, task, logger)) overdue++;
      }
      const report = { tasks: stale.length, readded, overdue };
      if (readded + overdue > 0) logger.warn(report, 'reconciler: re-added vanished jobs or canceled overdue tasks');
      return report;
    },
    opts,
  );
}
