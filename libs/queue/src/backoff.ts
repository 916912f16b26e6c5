import type { BackoffStrategy } from 'bullmq';

/** Put on a job (`backoff: SCHEDULED_BACKOFF`) to have its retries follow the worker's `scheduleBackoff`. */
export const SCHEDULED_BACKOFF = { type: 'schedule' } as const;

/**
 * A fixed retry schedule for a worker's `backoffStrategy`: the n-th retry waits `scheduleMs[n - 1]`; past the end
 * of the schedule the job fails for good (-1), whatever `attempts` says. BullMQ calls it with the number of
 * attempts made so far, including the one that just failed.
 */
export function scheduleBackoff(scheduleMs: readonly number[]): BackoffStrategy {
  for (const ms of scheduleMs) {
    if (!Number.isInteger(ms) || ms < 0)
      throw new Error(`Backoff delays must be non-negative integers (ms), got ${ms}.`);
  }
  const schedule = [...scheduleMs];
  return (attemptsMade: number) => schedule[attemptsMade - 1] ?? -1;
}
