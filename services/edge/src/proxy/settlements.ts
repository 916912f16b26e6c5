// Settling and releasing holds after the answer has gone out, off the caller's latency path. Both billing calls
// are idempotent (a repeat finds the hold no longer held and does nothing), so a call whose outcome is unknown is
// simply made again. Retries run for a few minutes, well inside the reservation's TTL: a hold is never released
// by expiry while its settlement is still being retried. Shutdown waits for them with drain().
import { billingRepository, type Db, type SettleInput } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';

const RETRY_DELAYS_MS = [50, 250, 1_000, 5_000, 15_000, 30_000, 60_000, 120_000];

export class Settlements {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly db: Db) {}

  settle(reservationId: string, input: SettleInput, log: Logger): void {
    this.track(() => billingRepository.settle(this.db, reservationId, input), { reservationId, action: 'settle', cost: String(input.cost) }, log);
  }

  release(reservationId: string, log: Logger): void {
    this.track(() => billingRepository.release(this.db, reservationId), { reservationId, action: 'release' }, log);
  }

  /** Resolves once every settlement and release begun so far has finished or given up. */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private track(run: () => Promise<unknown>, what: Record<string, string>, log: Logger) {
    const p = this.retry(run, what, log).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private async retry(run: () => Promise<unknown>, what: Record<string, string>, log: Logger): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await run();
        return;
      } catch (err) {
        const delay = RETRY_DELAYS_MS[attempt];
        if (delay === undefined) {
          // The hold stays held until releaseExpired gives it back: the caller is not charged.
          log.error({ err, ...what, attempts: attempt + 1 }, 'billing call failed for good');
          return;
        }
        log.warn({ err, ...what, attempt: attempt + 1 }, 'billing call failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}
