import type { JobInput, KeyedJob } from '@gensvc/contracts';
import { enqueue, jobIdOf, type EnqueueOptions, type Queues } from './queues';

export interface EnsureJobOptions extends EnqueueOptions {
  /** When the job exists but is delayed, run it now (a redelivery asked for now, not in an hour). */
  promote?: boolean;
}

export type EnsureJobOutcome = 'added' | 'exists' | 'promoted' | 'replaced';

/**
 * Makes sure the job with this payload's deterministic id (its contract's `key`) is waiting, delayed or running. Plain
 * `enqueue` is a no-op while a job with the id exists in any state, finished ones included (they are kept for a while),
 * so a job re-made after its predecessor failed or completed would silently not run: here a finished job of that id is
 * removed and added again. For the reconciler and for producers that may repeat a job (redelivery, an attempt re-run).
 */
export async function ensureJob<J extends KeyedJob>(
  queues: Queues,
  contract: J,
  payload: JobInput<J>,
  opts: EnsureJobOptions = {},
): Promise<EnsureJobOutcome> {
  const { promote, ...enqueueOpts } = opts;
  const queue = queues.get(contract.queue);
  const existing = await queue.getJob(jobIdOf(contract, payload));
  let outcome: EnsureJobOutcome = 'added';
  if (existing) {
    const state = await existing.getState();
    if (state === 'delayed' && promote) {
      await existing.promote().catch(() => undefined); // it may have become due meanwhile
      return 'promoted';
    }
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return 'exists';
    // A finished job of this id is history: remove it (ignore a race with another remover) and add anew.
    await existing.remove().catch(() => undefined);
    outcome = 'replaced';
  }
  await enqueue(queues, contract, payload, enqueueOpts);
  return outcome;
}
