// The dispatcher's reconciler recovers the step the dispatcher owns: a pending delivery that has not moved for a
// while (its chain of attempt jobs vanished with Redis, or the dispatcher died between recording an attempt and
// adding the next). The last recorded attempt's outcome is decided and applied again (delivered, parked, or the next
// attempt's job); with no attempt of the current round recorded, the round's first attempt is added, due now. One
// replica sweeps per interval (libs/queue startSweeper).
import { callbackRepository, taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { scheduleCallback, staleAfterMs, startSweeper, type Queues, type ReconcileConfig, type Sweeper } from '@gensvc/queue';
import type { Redis } from 'ioredis';
import { applyAttempt } from './handlers/callback-deliver';

export interface DeliveryReconcilerDeps {
  config: ReconcileConfig & { callbacks: { retryScheduleMs: number[] } };
  db: Db;
  queues: Queues;
  redis: Redis;
  logger: Logger;
}

export interface DeliveryReconcileReport {
  callbacks: number;
  /** Attempt jobs that were missing (or finished while their delivery still waited) and were added again. */
  readded: number;
}

const BATCH = 500;

export function startDeliveryReconciler(deps: DeliveryReconcilerDeps, opts: { autorun?: boolean } = {}): Sweeper<DeliveryReconcileReport> {
  const { config, db, queues, logger } = deps;

  async function sweep(): Promise<DeliveryReconcileReport> {
    const now = new Date();
    const pending = await taskRepository.stalePendingDeliveries(db, new Date(now.getTime() - staleAfterMs(config.tasks)), BATCH);
    let readded = 0;
    for (const task of pending) {
      const last = await callbackRepository.lastAttempt(db, task.id);
      const then = last ? await applyAttempt(deps, task, last, { now }) : null;
      if (then?.step === 'delivered' || then?.step === 'parked') continue;
      if (then?.step === 'retry') {
        // applyAttempt ensured the next attempt's job (counted as re-added: it had not run, or the row would have moved).
        readded++;
        continue;
      }
      // No attempt of this round recorded yet (none at all, or only an earlier round's): the round's first, now.
      const outcome = await scheduleCallback(queues, { taskId: task.id, workspaceId: task.workspaceId }, task.callbackRoundStart);
      if (outcome !== 'exists') readded++;
      await taskRepository.applyDelivery(db, task.id, { attempt: task.callbackRoundStart, to: 'pending' }, now);
    }
    const report = { callbacks: pending.length, readded };
    if (readded > 0) logger.warn(report, 'delivery reconciler: re-added callback attempts');
    return report;
  }

  return startSweeper({ name: 'callback-dispatcher', redis: deps.redis, prefix: config.queuePrefix, intervalMs: config.tasks.reconcileIntervalMs, logger, sweep, autorun: opts.autorun });
}
