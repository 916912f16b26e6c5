// The callback delivery decision (spec §6, DESIGN.md §4), in one pure function: given the task's delivery state as
// read after an attempt was recorded and that attempt's outcome, what follows. The repository only applies it
// (taskRepository.recordDeliveryAttempt, each write conditional); the dispatcher's handler decides after each attempt
// and
// its reconciler decides again from the last recorded attempt, so both agree by construction.
import type { CallbackState } from '@gensvc/db';

/** A recorded attempt, as much of it as deciding what follows needs. */
export interface RecordedAttempt {
  attempt: number;
  statusCode: number | null;
  /** When the attempt started (a delivered callback is delivered as of then: the delivered_at its body carried). */
  createdAt: Date;
  durationMs: number | null;
}

/** What a delivery does after an attempt's outcome. */
export type DeliveryStep =
  | { step: 'delivered' }
  | { step: 'parked' }
  /** Attempt `attempt` is due in `delayMs`: the caller adds its job. */
  | { step: 'retry'; attempt: number; delayMs: number }
  /** Nothing to do: no longer pending, or a redelivery started a newer round (whose first job its starter made). */
  | { step: 'none'; reason: 'not_pending' | 'superseded' };

/** A receiver's answer that delivers the callback: any 2xx. */
export const isDeliveredStatus = (status: number | null) => status !== null && status >= 200 && status < 300;

/**
 * A 2xx delivers. A failure of a round's last attempt (a round is `scheduleMs.length` attempts, starting at
 * `callbackRoundStart`) parks. Any other failure names the next attempt, due `scheduleMs[j]` after this one ended
 * (`endedAt`, by default its start plus its duration): counted from the failure, so a re-decided outcome does not
 * push it later.
 */
export function decideDelivery(
  task: { callbackState: CallbackState; callbackRoundStart: number },
  recorded: RecordedAttempt,
  scheduleMs: readonly number[],
  at: { now: number; endedAt?: number },
): DeliveryStep {
  if (task.callbackState !== 'pending') return { step: 'none', reason: 'not_pending' };
  if (recorded.attempt < task.callbackRoundStart) return { step: 'none', reason: 'superseded' };
  if (isDeliveredStatus(recorded.statusCode)) return { step: 'delivered' };
  const index = recorded.attempt - task.callbackRoundStart;
  if (index + 1 >= scheduleMs.length) return { step: 'parked' };
  const endedAt = at.endedAt ?? recorded.createdAt.getTime() + (recorded.durationMs ?? 0);
  return {
    step: 'retry',
    attempt: recorded.attempt + 1,
    delayMs: Math.max(0, endedAt + scheduleMs[index + 1]! - at.now),
  };
}
