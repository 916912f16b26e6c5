// Postgres is the truth; Redis only carries the next step. The task-runner's reconciler recovers the steps the
// task-runner owns: a queued task gets its task.submit, a running task without the provider's result gets its next
// task.poll, when they have not moved for a while (Redis flushed or restarted, a worker killed between a transition
// and its job, or a job that failed for good while its row still waits). The archiver recovers archives and
// completions (services/archiver/src/reconciler.ts), the dispatcher deliveries (services/callback-dispatcher/src/
// reconciler.ts). Every job has a deterministic id and every handler re-reads its row and checks it is still due,
// so re-adding a job that exists, or one whose step already happened, does nothing.
import { taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { schedulePoll, scheduleSubmit, staleAfterMs, startSweeper, type Queues, type ReconcileConfig, type Sweeper } from '@gensvc/queue';
import type { Redis } from 'ioredis';
import { jobRef } from './handlers/task-steps';

export interface ReconcilerDeps {
  config: ReconcileConfig;
  db: Db;
  queues: Queues;
  redis: Redis;
  logger: Logger;
}

export interface ReconcileReport {
  tasks: number;
  /** Jobs that were missing (or finished while their row still waited) and were added again. */
  readded: number;
}

export type Reconciler = Sweeper<ReconcileReport>;

const BATCH = 500;

export function startReconciler(deps: ReconcilerDeps, opts: { autorun?: boolean } = {}): Reconciler {
  const { config, db, queues, logger } = deps;

  async function sweep(): Promise<ReconcileReport> {
    const now = new Date();
    const stale = await taskRepository.staleInProvider(db, new Date(now.getTime() - staleAfterMs(config.tasks)), BATCH);
    let readded = 0;
    for (const task of stale) {
      const outcome =
        task.status === 'queued'
          ? await scheduleSubmit(queues, jobRef(task), { recover: true })
          : // The poll the task's count says is next, due now: the task has waited longer than any poll already.
            await schedulePoll(queues, jobRef(task), task.attempts, 0, { recover: true });
      if (outcome !== 'exists' && outcome !== 'promoted') readded++;
      await taskRepository.touch(db, task.id, now);
    }
    const report = { tasks: stale.length, readded };
    if (readded > 0) logger.warn(report, 'reconciler: re-added submit and poll jobs that had vanished');
    return report;
  }

  return startSweeper({ name: 'task-runner', redis: deps.redis, prefix: config.queuePrefix, intervalMs: config.tasks.reconcileIntervalMs, logger, sweep, autorun: opts.autorun });
}
