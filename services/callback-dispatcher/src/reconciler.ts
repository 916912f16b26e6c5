// The dispatcher's reconciler recovers the step the dispatcher owns: a pending delivery that has not moved for a
// while (its chain of attempt jobs vanished with Redis, or the dispatcher died between recording an attempt and
// adding the next). The last recorded attempt's outcome is decided and applied again (delivered, parked, or the next
// attempt's job); with no attempt of the current round recorded, the round's first attempt is added, due now. One
// replica sweeps per interval (libs/queue startSweeper).
import { callbackRepository, taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import {
  scheduleCallback,
  startReconcileSweeper,
  taskJobRef,
  type Queues,
  type ReconcilerBaseDeps,
  type Sweeper,
} from '@gensvc/queue';
import { applyAttempt } from './handlers/callback-deliver';

export interface DeliveryReconcilerDeps extends ReconcilerBaseDeps {
  config: ReconcilerBaseDeps['config'] & { callbacks: { retryScheduleMs: number[] } };
  db: Db;
  queues: Queues;
  logger: Logger;
}

export interface DeliveryReconcileReport {
  callbacks: number;
  /** Attempt jobs that were missing (or finished while their delivery still waited) and were added again. */
  readded: number;
}

export function startDeliveryReconciler(
  deps: DeliveryReconcilerDeps,
  opts: { autorun?: boolean } = {},
): Sweeper<DeliveryReconcileReport> {
  const { db, queues, logger } = deps;
  return startReconcileSweeper(
    'callback-dispatcher',
    deps,
    async ({ now, staleBefore, batch }): Promise<DeliveryReconcileReport> => {
      const pending = await taskRepository.stalePendingDeliveries(db, staleBefore, batch);
      let readded = 0;
      for (const task of pending) {
        const last = await callbackRepository.lastAttempt(db, task.id);
        const then = last ? await applyAttempt(deps, task, last, { now }) : null;
        if (then?.step === 'delivered' || then?.step === 'parked') continue;
        if (then?.step === 'retry') {
          // applyAttempt ensured the next attempt's job (counted as re-added: it had not run, or the row would have
          // moved).
          readded++;
          continue;
        }
        // No attempt of this round recorded yet (none at all, or only an earlier round's): the round's first, now.
        const outcome = await scheduleCallback(queues, taskJobRef(task), task.callbackRoundStart);
        if (outcome !== 'exists') readded++;
        await taskRepository.recordDeliveryAttempt(
          db,
          { taskId: task.id, decidedOn: task, step: { attempt: task.callbackRoundStart, to: 'pending' } },
          now,
        );
      }
      const report = { callbacks: pending.length, readded };
      if (readded > 0) logger.warn(report, 'delivery reconciler: re-added callback attempts');
      return report;
    },
    opts,
  );
}
