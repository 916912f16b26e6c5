// Idempotency-Key on every POST that costs money (Stripe's rules): the same key and body within 24 h answers the
// first answer again and charges once; the same key with another body answers 409. Only successes are kept: a
// failed first request was not charged, so its retry runs again.
import { createHash } from 'node:crypto';
import { idempotencyRepository, type Db } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { authOf } from '../auth/authenticate';
import { locals } from '../http/request-context';

const KEY = /^[\x21-\x7e]{1,255}$/;

/** Marks a stored success that was streamed: its bytes were not kept, so it cannot be replayed. */
const STREAMED = { streamed: true } as const;

/**
 * Starts the request under its Idempotency-Key: 'new' (this request runs; record its answer), or the stored answer
 * to replay; another request under the key, or one still in flight, is a 409.
 */
export async function beginIdempotent(
  db: Db,
  workspaceId: string,
  key: string,
  requestHash: string,
): Promise<{ state: 'new'; id: string } | { state: 'replay'; status: number; body: unknown }> {
  if (!KEY.test(key))
    throw errors.invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters.', 'Idempotency-Key');
  const begun = await idempotencyRepository.begin(db, workspaceId, key, requestHash);
  switch (begun.state) {
    case 'mismatch':
      throw errors.idempotencyKeyReused();
    case 'in_flight':
      throw errors.idempotencyInProgress();
    case 'replay':
      if (isStreamed(begun.body)) {
        throw errors.idempotencyKeyReused(
          'The request with this Idempotency-Key was streamed and has completed; a streamed answer cannot be replayed.',
        );
      }
      return begun;
    case 'new':
      return begun;
  }
}

export function idempotency(deps: { db: Db }) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const key = req.get('idempotency-key');
    if (key === undefined) return next();
    try {
      const { workspace } = authOf(res);
      const hash = createHash('sha256')
        .update(`${req.method} ${req.path}\n`)
        .update(JSON.stringify(req.body ?? null))
        .digest('hex');
      const begun = await beginIdempotent(deps.db, workspace.id, key, hash);
      if (begun.state === 'replay') {
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(begun.status).json(begun.body);
        return;
      }
      record(deps.db, begun.id, res);
      next();
    } catch (e) {
      next(e);
    }
  };
}

/** Answers kept should their caller leave before they are sent (keepIfGone). */
const ifGone = new WeakMap<Response, { status: number; body: unknown }>();

/**
 * The answer the request's Idempotency-Key keeps should its caller leave before one is sent: a creation that waits
 * for its task (Prefer: wait) has made and held it, so a retry must find that task, not make and charge another.
 */
export function keepIfGone(res: Response, status: number, body: unknown): void {
  ifGone.set(res, { status, body });
}

const isStreamed = (body: unknown) =>
  typeof body === 'object' && body !== null && (body as { streamed?: unknown }).streamed === true;

/**
 * Keeps the first answer before it is sent, so a retry arriving right after it already finds it. Every answer ends
 * through res.end (res.json, sendJson, the error body), so that is where it is caught: a whole JSON answer is kept
 * from the very text sent, a failure is forgotten, and a streamed answer (its headers went out before the end) is
 * settled when the connection closes.
 */
function record(db: Db, id: string, res: Response) {
  let settled = false;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.end = ((...args: unknown[]) => {
    if (settled || res.headersSent) return end(...args);
    settled = true;
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const text = ok ? jsonText(res, args[0]) : undefined;
    if (ok && text === undefined) {
      settled = false; // a whole answer that is not JSON is not replayable: kept as streamed at close
      return end(...args);
    }
    const store = ok
      ? idempotencyRepository.completeText(db, id, res.statusCode, text!)
      : idempotencyRepository.abandon(db, id);
    store
      .catch((err) => locals(res).log.error({ err }, 'could not store the idempotent answer'))
      .finally(() => end(...args));
    return res;
  }) as Response['end'];
  res.on('close', () => {
    if (settled) return;
    const ok = res.statusCode >= 200 && res.statusCode < 300 && res.writableFinished;
    const kept = ok ? undefined : ifGone.get(res);
    const store = ok
      ? idempotencyRepository.complete(db, id, res.statusCode, STREAMED)
      : kept
        ? idempotencyRepository.completeText(db, id, kept.status, JSON.stringify(kept.body))
        : idempotencyRepository.abandon(db, id);
    store.catch((err) => locals(res).log.error({ err }, 'could not store the idempotent answer'));
  });
}

/** The text of a whole JSON answer given to res.end, or undefined when the answer is not one. */
function jsonText(res: Response, chunk: unknown): string | undefined {
  if (!String(res.getHeader('Content-Type') ?? '').startsWith('application/json')) return undefined;
  if (typeof chunk === 'string') return chunk;
  if (Buffer.isBuffer(chunk)) return chunk.toString('utf8');
  return undefined;
}
