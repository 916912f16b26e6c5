// billing.release-expired (every minute): gives back billing holds whose owner died before settling them (edge chat,
// image and evaluate requests alike) and forgets Idempotency-Key records past their 24 h and dashboard sessions past
// any use (expired, or revoked a day ago), and password-reset links a day past their hour. One scheduled job for the
// whole deployment, so the work runs once a minute however many replicas there are. Safe to run twice at once:
// each release is one atomic conditional update, and a record is deleted once.
import {
  billingRepository,
  idempotencyRepository,
  passwordResetRepository,
  sessionRepository,
  type Db,
} from '@gensvc/db';
import type { Logger } from '@gensvc/observability';

export interface ReleaseExpiredDeps {
  db: Db;
  logger: Logger;
}

/** Holds released per statement: a backlog (after an outage) is worked off in several, not one huge update. */
const BATCH = 500;

export async function billingReleaseExpired(
  deps: ReleaseExpiredDeps,
  now = new Date(),
): Promise<{ released: number; forgotten: number; sessions: number; resetLinks: number }> {
  const { db, logger } = deps;
  let released = 0;
  for (;;) {
    const n = await billingRepository.releaseExpired(db, now, BATCH);
    released += n;
    if (n < BATCH) break;
  }
  const forgotten = await idempotencyRepository.deleteExpired(db, now);
  const sessions = await sessionRepository.purge(db, now);
  const resetLinks = await passwordResetRepository.purge(db, now);
  if (released > 0 || forgotten > 0 || sessions > 0 || resetLinks > 0) {
    logger.info(
      { released, forgotten, sessions, resetLinks },
      'released expired reservations, forgot expired idempotency records, dead sessions and reset links',
    );
  }
  return { released, forgotten, sessions, resetLinks };
}
