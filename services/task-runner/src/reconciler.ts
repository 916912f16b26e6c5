// Postgres is the truth; Redis only carries the next step. The reconciler finds tasks and callback deliveries that
// have not moved for a while and makes sure each has its next job: Redis flushed or restarted, a worker killed
// between a transition and its enqueue, or a job that failed for good while its row still waits. Every job has a
// deterministic id and every handler re-reads its row and checks it is still due, so re-adding a job that exists,
// or one whose step already happened, does nothing.
//
// One replica sweeps at a time (a Redis lock per interval); a sweep that overlaps another is harmless anyway.
import { CallbackDeliver, TaskPoll, TaskSubmit } from '@gensvc/contracts';
import { callbackRepository, taskRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { ensureJob, type Queues } from '@gensvc/queue';
import type { Redis } from 'ioredis';
import { ensureArchives } from './handlers/task-steps';

export interface ReconcilerDeps {
  config: { queuePrefix: string; tasks: { reconcileIntervalMs: number; pollScheduleMs: number[] }; callbacks: { retryScheduleMs: number[] } };
  db: Db;
  queues: Queues;
  redis: Redis;
  logger: Logger;
}

export interface ReconcileReport {
  tasks: number;
  callbacks: number;
  /** Jobs that were missing (or finished while their row still waited) and were added again. */
  readded: number;
}

export interface Reconciler {
  /** One sweep now (tests, and the timer). */
  runOnce(): Promise<ReconcileReport>;
  stop(): Promise<void>;
}

const BATCH = 500;

/**
 * A live task moves at least every poll; one that has not moved for this long may have lost its job. Longer than
 * the slowest poll so that healthy tasks are rarely looked at (looking at one is harmless, only work).
 */
export function staleAfterMs(config: ReconcilerDeps['config']): number {
  return Math.max(config.tasks.reconcileIntervalMs, 3 * Math.max(...config.tasks.pollScheduleMs));
}

export function startReconciler(deps: ReconcilerDeps, opts: { autorun?: boolean } = {}): Reconciler {
  const { config, db, queues, logger } = deps;
  const interval = config.tasks.reconcileIntervalMs;
  const lockKey = `${config.queuePrefix}:task-runner:reconciler`;
  const schedule = config.callbacks.retryScheduleMs;

  async function reconcileTasks(before: Date, now: Date): Promise<{ seen: number; readded: number }> {
    const stale = await taskRepository.stale(db, before, BATCH);
    let readded = 0;
    const added = (outcome: string) => {
      if (outcome !== 'exists' && outcome !== 'promoted') readded++;
    };
    for (const task of stale) {
      const envelope = { taskId: task.id, workspaceId: task.workspaceId };
      if (task.status === 'queued') {
        added(await ensureJob(queues, TaskSubmit, envelope, { jobId: [task.id] }));
      } else if (task.output === null) {
        added(await ensureJob(queues, TaskPoll, { ...envelope, attempt: task.attempts }, { jobId: [task.id, task.attempts] }));
      } else {
        // The provider finished: the archiver owes the pending outputs; with none pending, the completion itself
        // was lost (the archiver died between its last entry and completing).
        const pending = await ensureArchives(queues, task);
        pending.forEach(added);
        const done = pending.length === 0 ? await taskRepository.completeIfArchived(db, task.id, now) : null;
        if (done?.callback) {
          const attempt = done.callbackRoundStart;
          added(await ensureJob(queues, CallbackDeliver, { ...envelope, attempt }, { jobId: [task.id, attempt] }));
        }
      }
      await taskRepository.touch(db, task.id, now);
    }
    return { seen: stale.length, readded };
  }

  async function reconcileCallbacks(before: Date, now: Date): Promise<{ seen: number; readded: number }> {
    const pending = await callbackRepository.pendingSince(db, before, BATCH);
    let readded = 0;
    for (const task of pending) {
      // The last recorded attempt's outcome is applied again (the dispatcher may have died before applying it): it
      // marks the delivery delivered or parked, or names the next attempt and when it is due.
      const last = await callbackRepository.lastAttempt(db, task.id);
      const then = last ? await callbackRepository.applyAttempt(db, task, last, schedule, { now }) : null;
      if (then?.step === 'delivered' || then?.step === 'parked') continue;
      // The next attempt; or, when no attempt of this round is recorded yet (none at all, or only an earlier round's),
      // the round's first, due now.
      const [attempt, delay] = then?.step === 'retry' ? [then.attempt, then.delayMs] : [task.callbackRoundStart, 0];
      const outcome = await ensureJob(queues, CallbackDeliver, { taskId: task.id, workspaceId: task.workspaceId, attempt }, { jobId: [task.id, attempt], delay });
      if (outcome !== 'exists') readded++;
      // applyAttempt touched it already when it named a next attempt.
      if (then?.step !== 'retry') await callbackRepository.touchPending(db, task.id, now);
    }
    return { seen: pending.length, readded };
  }

  async function runOnce(): Promise<ReconcileReport> {
    const now = new Date();
    const before = new Date(now.getTime() - staleAfterMs(config));
    const tasks = await reconcileTasks(before, now);
    const callbacks = await reconcileCallbacks(before, now);
    const report = { tasks: tasks.seen, callbacks: callbacks.seen, readded: tasks.readded + callbacks.readded };
    if (report.readded > 0) logger.warn(report, 'reconciler: re-added jobs that had vanished');
    else if (report.tasks + report.callbacks > 0) logger.debug(report, 'reconciler: sweep');
    return report;
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const tick = async () => {
    // Held for most of an interval: the other replicas skip this round.
    const won = await deps.redis.set(lockKey, String(process.pid), 'PX', Math.max(1, interval - 100), 'NX');
    if (won === 'OK') await runOnce();
  };
  const schedule_ = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((err: unknown) => logger.error({ err }, 'reconciler: sweep failed; next interval retries'))
        .finally(schedule_);
    }, interval);
    timer.unref();
  };
  if (opts.autorun !== false) schedule_();

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
