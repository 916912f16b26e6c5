// Idempotency-Key on every POST that costs money (Stripe's rules): the same key and body within 24 h answers the
// first answer again and charges once; the same key with another body answers 409. Only successes are kept: a
// failed first request was not charged, so its retry runs again.
import { createHash } from 'node:crypto';
import { idempotencyRepository, type Db } from '@gensvc/db';
import { AppError, errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { authOf } from '../auth/authenticate';
import { locals } from '../http/request-context';

const KEY = /^[\x21-\x7e]{1,255}$/;

/** Marks a stored success that was streamed: its bytes were not kept, so it cannot be replayed. */
const STREAMED = { streamed: true } as const;

export function idempotency(deps: { db: Db }) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const key = req.get('idempotency-key');
    if (key === undefined) return next();
    try {
      if (!KEY.test(key)) throw errors.invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters.', 'Idempotency-Key');
      const { workspace } = authOf(res);
      const hash = createHash('sha256').update(`${req.method} ${req.path}\n`).update(JSON.stringify(req.body ?? null)).digest('hex');
      const begun = await idempotencyRepository.begin(deps.db, workspace.id, key, hash);
      switch (begun.state) {
        case 'mismatch':
          throw new AppError({ status: 409, code: 'idempotency_key_reused', param: 'Idempotency-Key', message: 'This Idempotency-Key was used with a different request in the last 24 hours.' });
        case 'in_flight':
          throw new AppError({ status: 409, code: 'idempotency_in_progress', param: 'Idempotency-Key', message: 'A request with this Idempotency-Key is still being processed; retry shortly.', headers: { 'Retry-After': '1' } });
        case 'replay':
          if (isStreamed(begun.body)) {
            throw new AppError({ status: 409, code: 'idempotency_key_reused', param: 'Idempotency-Key', message: 'The request with this Idempotency-Key was streamed and has completed; a streamed answer cannot be replayed.' });
          }
          res.setHeader('Idempotent-Replayed', 'true');
          res.status(begun.status).json(begun.body);
          return;
        case 'new':
          record(deps.db, begun.id, res);
          return next();
      }
    } catch (e) {
      next(e);
    }
  };
}

const isStreamed = (body: unknown) => typeof body === 'object' && body !== null && (body as { streamed?: unknown }).streamed === true;

/** Keeps the first answer before it is sent, so a retry arriving right after it already finds it. */
function record(db: Db, id: string, res: Response) {
  let settled = false;
  const send = res.json.bind(res);
  res.json = (body: unknown) => {
    settled = true;
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const store = ok ? idempotencyRepository.complete(db, id, res.statusCode, body) : idempotencyRepository.abandon(db, id);
    store
      .catch((err) => locals(res).log.error({ err }, 'could not store the idempotent answer'))
      .finally(() => send(body));
    return res;
  };
  // Streamed answers (SSE) never pass through res.json.
  res.on('close', () => {
    if (settled) return;
    const ok = res.statusCode >= 200 && res.statusCode < 300 && res.writableFinished;
    const store = ok ? idempotencyRepository.complete(db, id, res.statusCode, STREAMED) : idempotencyRepository.abandon(db, id);
    store.catch((err) => locals(res).log.error({ err }, 'could not store the idempotent answer'));
  });
}
