import { checkBucket } from '@gensvc/storage';
import { pingDb } from '@gensvc/db';
import { errorBody } from '../../http/error-body';
import { locals } from '../../http/request-context';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import type { EdgeDeps } from '../../deps';

const CHECK_TIMEOUT_MS = 2_000;

async function check(run: (signal: AbortSignal) => Promise<unknown>): Promise<string> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`));
    }, CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([run(controller.signal), timeout]);
    return 'ok';
  } catch (e) {
    return `unreachable: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Ready when Postgres, Redis and S3 all answer; otherwise 503 naming each one that does not. */
export function readyz(deps: Pick<EdgeDeps, 'db' | 'redis' | 's3' | 'config'>) {
  return async (_req: Request, res: Response) => {
    const [postgres, redis, s3] = await Promise.all([
      check(() => pingDb(deps.db)),
      check(() => deps.redis.ping()),
      check((signal) => checkBucket(deps.s3, deps.config.s3.bucket, signal)),
    ]);
    const checks = { postgres, redis, s3 };
    const failing = Object.entries(checks).filter(([, v]) => v !== 'ok');
    if (failing.length === 0) return void res.json({ status: 'ready', checks });
    const error = errors.unavailable(`Not ready: ${failing.map(([name, why]) => `${name} ${why}`).join('; ')}`);
    res.status(503).json({ ...errorBody('native', error, locals(res).requestId), status: 'unavailable', checks });
  };
}
