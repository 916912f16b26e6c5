// POST /api/v1/evaluate (spec 4.1): validate, reserve the cost bound, enqueue evaluate.run, wait for its result.
//
// Who pays for an answer the caller never got: nobody. Settling the reservation is the commit point. The worker
// settles only after a valid answer, and the edge, when it stops waiting (deadline passed, or the caller hung up),
// releases the reservation first. Both are conditional updates of one row, so exactly one wins:
// - the edge's release wins: the caller hears 504 upstream_timeout and the worker's later settle finds nothing
//   held, so it charges nothing;
// - the worker's settle won: the answer exists and was charged, and its result is published right after, so the
//   edge waits a short grace for it and answers it after all.
// The worker also makes no upstream call once the deadline (carried in the job) has passed, and bounds each call
// by it, so a backlog never spends provider calls on callers who have gone.
import { evaluateRunResultSchema, type EvaluateRunResult } from '@gensvc/contracts';
import { billingRepository, toAmount } from '@gensvc/db';
import { AppError, errors } from '@gensvc/errors';
import { scheduleEvaluate } from '@gensvc/queue';
import { reservationFor } from '@gensvc/upstream';
import type { Job } from 'bullmq';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { reserveFor } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseEvaluateRequest, unknownModel } from './schema';

export interface EvaluateOptions {
  /** How long the caller is kept waiting for the answer before 504 upstream_timeout. */
  waitMs: number;
  /** After losing the race to release, how long to wait for the result the worker is publishing. */
  graceMs: number;
}

export const DEFAULT_EVALUATE_OPTIONS: EvaluateOptions = { waitMs: 60_000, graceMs: 10_000 };

type Waited = { kind: 'finished'; value: unknown } | { kind: 'failed'; error: unknown } | { kind: 'late' } | { kind: 'gone' };

export function evaluate(deps: EdgeDeps, options: EvaluateOptions) {
  return async (req: Request, res: Response) => {
    const body = parseEvaluateRequest(req.body);
    const model = await deps.catalog.model(body.model);
    if (!model) throw unknownModel(body.model);
    if (model.kind !== 'evaluation') {
      throw errors.modelNotSupported(`The model "${model.id}" is a ${model.kind} model; POST /api/v1/evaluate takes an evaluation model.`);
    }
    if (!model.enabled) throw errors.modelNotSupported(`The model "${model.id}" is disabled.`);

    const input = { state: body.state, questions: body.questions };
    // What goes upstream is {model, state, questions}; the provider counts tokens of {state, questions}, and a
    // token is at least one byte, so these bytes bound the input tokens.
    const inputBytes = Buffer.byteLength(JSON.stringify(input), 'utf8');
    const reservation = await reserveFor(deps, res, reservationFor(model, { inputBytes }));
    const { key, workspace } = authOf(res);
    const { requestId, log } = locals(res);
    const deadlineAt = Date.now() + options.waitMs;

    let job: Job;
    try {
      // Keyed by the reservation; one attempt (scheduleEvaluate says why).
      job = await scheduleEvaluate(deps.queues, { requestId, workspaceId: workspace.id, apiKeyId: key.id, reservationId: reservation.id, deadlineAt, model: model.id, request: input });
    } catch (e) {
      await billingRepository.release(deps.db, reservation.id).catch((err) => log.error({ err, reservationId: reservation.id }, 'could not release'));
      throw new AppError({ status: 503, code: 'service_unavailable', message: 'The evaluation could not be queued; nothing was charged. Retry shortly.', expose: true, cause: e });
    }

    const finished = job.waitUntilFinished(deps.evaluateEvents, Math.max(1, deadlineAt - Date.now()) + options.graceMs).then(
      (value): Waited => ({ kind: 'finished', value }),
      (error: unknown): Waited => ({ kind: 'failed', error }),
    );
    const stop = stopWaiting(res, deadlineAt);
    let waited = await Promise.race([finished, stop.promise]);
    stop.cancel();
    if (waited.kind === 'late' || waited.kind === 'gone') {
      if (await billingRepository.release(deps.db, reservation.id)) {
        if (waited.kind === 'gone') return;
        throw new AppError({
          status: 504,
          code: 'upstream_timeout',
          message: `The evaluation did not finish within ${options.waitMs / 1000} s; nothing was charged.`,
          expose: true,
        });
      }
      // The worker settled (or released after a failure) before the release: its result is on its way.
      waited = await finished;
      if (res.writableEnded || res.destroyed) return;
    }
    if (waited.kind !== 'finished') {
      // The worker broke, or its result never came: whatever it held is given back unless it was charged.
      const released = await billingRepository.release(deps.db, reservation.id).catch(() => false);
      const why = waited.kind === 'failed' ? waited.error : undefined;
      throw errors.internal(new Error(`evaluate.run gave no result (reservation ${reservation.id}, released: ${released})`, { cause: why }));
    }

    const result = evaluateRunResultSchema.safeParse(waited.value);
    if (!result.success) throw errors.internal(new Error(`evaluate.run returned an unreadable result: ${result.error.message}`));
    answer(res, result.data, model.id, workspace.currency);
  };
}

function answer(res: Response, result: EvaluateRunResult, model: string, currency: string) {
  if (!result.ok) {
    const { status, code, message, param } = result.error;
    // The worker writes these messages itself (never a provider's stack or secret); only its 500s stay hidden.
    throw new AppError({ status, code, message, param, expose: status !== 500 });
  }
  res.json({ model, answers: result.answers, usage: result.usage, cost: { amount: toAmount(BigInt(result.charged)), currency } });
}

/** Resolves 'late' at the deadline, or 'gone' if the caller hangs up before the answer is sent. */
function stopWaiting(res: Response, deadlineAt: number): { promise: Promise<Waited>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  let onClose = () => {};
  const promise = new Promise<Waited>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'late' }), Math.max(0, deadlineAt - Date.now()));
    onClose = () => {
      if (!res.writableEnded) resolve({ kind: 'gone' });
    };
    res.on('close', onClose);
  });
  return {
    promise,
    cancel: () => {
      clearTimeout(timer);
      res.off('close', onClose);
    },
  };
}
