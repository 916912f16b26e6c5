import type { Metrics } from '@gensvc/observability';
import { isAppError } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';

/** The refusals that stop a paid call before it reaches a provider, by their error code. */
const REASONS: Record<string, string> = {
  spending_cap_exhausted: 'spend_cap',
  insufficient_balance: 'balance',
  rate_limit_exceeded: 'rate',
};

/** Counts `gensvc_reservations_refused_total{reason}` on the way to the error handler, whichever route refused. */
export function countRefusals(metrics: Metrics) {
  return (err: unknown, _req: Request, _res: Response, next: NextFunction) => {
    const reason = isAppError(err) ? REASONS[err.code] : undefined;
    if (reason) metrics.reservationsRefused.inc({ reason });
    next(err);
  };
}
