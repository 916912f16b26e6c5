import { checkBucket } from '@gensvc/storage';
import { pingDb } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { runChecks, type ReadinessCheck } from '@gensvc/observability';
import type { Request, Response } from 'express';
import { errorBody } from '../../http/error-body';
import { locals } from '../../http/request-context';
import type { EdgeDeps } from '../../deps';

/** What the edge needs to serve: Postgres, Redis and S3. The same checks answer here and on the ops port. */
export function edgeReadinessChecks(
  deps: Pick<EdgeDeps, 'db' | 'redis' | 's3' | 'config'>,
): Record<string, ReadinessCheck> {
  return {
    postgres: () => pingDb(deps.db),
    redis: () => deps.redis.ping(),
    s3: (signal) => checkBucket(deps.s3, deps.config.s3.bucket, signal),
  };
}

/**
 * Ready when Postgres, Redis and S3 all answer; otherwise 503. The status only: which store failed and why (driver
 * errors name internal hosts and addresses) is on the ops port's /readyz, which the public network cannot reach.
 */
export function readyz(deps: Pick<EdgeDeps, 'db' | 'redis' | 's3' | 'config'>) {
  const checks = edgeReadinessChecks(deps);
  return async (_req: Request, res: Response) => {
    const { ready } = await runChecks(checks);
    if (ready) return void res.json({ status: 'ready' });
    const error = errors.unavailable('Not ready: a store the edge needs does not answer.');
    res.status(503).json({ ...errorBody('native', error, locals(res).requestId), status: 'unavailable' });
  };
}
