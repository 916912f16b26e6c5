// The archiver's reconciler recovers the steps the archiver owns: a running task whose provider result is recorded
// gets an archive.output job for every output still pending (its jobs vanished with Redis, or failed for good), and
// one whose outputs are all dealt with but which is not completed (an archiver died between its last entry and the
// completion; the two are one statement now, so this is a task recorded before that, or a row edited by hand) is
// completed here, with its callback scheduled. One replica sweeps per interval (libs/queue startSweeper).
import { taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { scheduleArchives, scheduleCallback, staleAfterMs, startSweeper, type Queues, type ReconcileConfig, type Sweeper } from '@gensvc/queue';
import type { Redis } from 'ioredis';

export interface ArchiveReconcilerDeps {
  config: ReconcileConfig;
  db: Db;
  queues: Queues;
  redis: Redis;
  logger: Logger;
}

export interface ArchiveReconcileReport {
  tasks: number;
  /** Archive jobs that were missing (or finished while their output still waited) and were added again. */
  readded: number;
  /** Tasks completed here, their archives all done. */
  completed: number;
}

const BATCH = 500;

export function startArchiveReconciler(deps: ArchiveReconcilerDeps, opts: { autorun?: boolean } = {}): Sweeper<ArchiveReconcileReport> {
  const { config, db, queues, logger } = deps;

  async function sweep(): Promise<ArchiveReconcileReport> {
    const now = new Date();
    const stale = await taskRepository.staleInArchive(db, new Date(now.getTime() - staleAfterMs(config.tasks)), BATCH);
    let readded = 0;
    let completed = 0;
    for (const task of stale) {
      const ref = { taskId: task.id, workspaceId: task.workspaceId };
      const pending = await scheduleArchives(queues, ref, task.output, { recover: true });
      readded += pending.filter((o) => o !== 'exists' && o !== 'promoted').length;
      const done = pending.length === 0 ? await taskRepository.completeIfArchived(db, task.id, now) : null;
      if (done) completed++;
      if (done?.callback) await scheduleCallback(queues, ref, done.callbackRoundStart);
      if (!done) await taskRepository.touch(db, task.id, now);
    }
    const report = { tasks: stale.length, readded, completed };
    if (readded + completed > 0) logger.warn(report, 'archive reconciler: re-added archive jobs or completed tasks');
    return report;
  }

  return startSweeper({ name: 'archiver', redis: deps.redis, prefix: config.queuePrefix, intervalMs: config.tasks.reconcileIntervalMs, logger, sweep, autorun: opts.autorun });
}
