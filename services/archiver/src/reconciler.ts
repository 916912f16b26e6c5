// The archiver's reconciler recovers the steps the archiver owns: a running task whose provider result is recorded
// gets an archive.output job for every output still pending (its jobs vanished with Redis, or failed for good), and
// one whose outputs are all dealt with but which is not completed (an archiver died between its last entry and the
// completion; the two are one statement, so this is a row edited by hand or written by an older release) is
// completed here, with its callback scheduled. One replica sweeps per interval (libs/queue startSweeper).
import { taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import {
  publishTaskFinished,
  scheduleArchives,
  scheduleCallback,
  startReconcileSweeper,
  taskJobRef,
  type Queues,
  type ReconcilerBaseDeps,
  type Sweeper,
} from '@gensvc/queue';

export interface ArchiveReconcilerDeps extends ReconcilerBaseDeps {
  db: Db;
  queues: Queues;
  logger: Logger;
}

export interface ArchiveReconcileReport {
  tasks: number;
  /** Archive jobs that were missing (or finished while their output still waited) and were added again. */
  readded: number;
  /** Tasks completed here, their archives all done. */
  completed: number;
}

export function startArchiveReconciler(
  deps: ArchiveReconcilerDeps,
  opts: { autorun?: boolean } = {},
): Sweeper<ArchiveReconcileReport> {
  const { db, queues, logger } = deps;
  return startReconcileSweeper(
    'archiver',
    deps,
    async ({ now, staleBefore, batch }): Promise<ArchiveReconcileReport> => {
      const stale = await taskRepository.staleInArchive(db, staleBefore, batch);
      let readded = 0;
      let completed = 0;
      for (const task of stale) {
        const ref = taskJobRef(task);
        const pending = await scheduleArchives(queues, ref, task.output, { recover: true });
        readded += pending.filter((o) => o !== 'exists' && o !== 'promoted').length;
        const done = pending.length === 0 ? await taskRepository.completeIfArchived(db, task.id, now) : null;
        if (done) completed++;
        if (done?.callback) await scheduleCallback(queues, ref, done.callbackRoundStart);
        if (done) await publishTaskFinished(queues.connection, queues.prefix, task.id, logger);
        if (!done) await taskRepository.touch(db, task.id, now);
      }
      const report = { tasks: stale.length, readded, completed };
      if (readded + completed > 0) logger.warn(report, 'archive reconciler: re-added archive jobs or completed tasks');
      return report;
    },
    opts,
  );
}
