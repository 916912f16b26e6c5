// POST /api/v1/evaluate (spec 4.1): validate, hold the cost bound (deps.holds: this replica's budget lease), enqueue
// evaluate.run, wait for the worker's reply, charge, answer.
//
// Who pays for an answer the caller never got: nobody. The edge is the only one that charges, and it decides once,
// in memory, with the caller in front of it: the worker answers and names the cost, and publishes that on this
// process's reply channel; the edge charges it through its lease only if the reply came before the deadline and the
// caller is still connected, and answers only once the charge is written (so every 200 is in the ledger, and its
// `cost` is what was charged). When the edge stops waiting (deadline passed, or the caller hung up) it releases the
// hold in memory and stops listening for that job: a reply arriving later finds nobody and is charged by nobody. The
// worker, for its part, makes no upstream call once the deadline (carried in the job) has passed and bounds each
// call by it, so a backlog never spends provider calls on callers who have gone.
//
// A SIGKILL of this edge loses only calls in flight, none charged: a charge is written before its answer is sent,
// and the dead replica's leases are released at their expiry (billing.release-expired), as for chat.
import { EvaluateRun, type EvaluateReply, type EvaluateRunResult } from '@gensvc/contracts';
import { newId, toAmount } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { recordSpend } from '@gensvc/observability';
import { jobIdOf, scheduleEvaluate } from '@gensvc/queue';
import { reservationFor } from '@gensvc/upstream';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { ownerOf } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { sendJson } from '../../http/send-json';
import { modelForKey } from '../../models/key-models';
import { parseEvaluateRequest } from './schema';

export interface EvaluateOptions {
  /** How long the caller is kept waiting for the answer before 504 upstream_timeout. */
  waitMs: number;
}

export const DEFAULT_EVALUATE_OPTIONS: EvaluateOptions = { waitMs: 60_000 };

type Waited = { kind: 'replied'; reply: EvaluateReply } | { kind: 'late' } | { kind: 'gone' };

export function evaluate(deps: EdgeDeps, options: EvaluateOptions) {
  return async (req: Request, res: Response) => {
    const body = parseEvaluateRequest(req.body);
    const model = await modelForKey(deps.catalog, authOf(res).key, body.model);
    if (!model) throw errors.modelNotFound(body.model);
    if (model.kind !== 'evaluation') {
      throw errors.modelNotSupported(
        `The model "${model.id}" is a ${model.kind} model; POST /api/v1/evaluate takes an evaluation model.`,
      );
    }
    if (!model.enabled) throw errors.modelNotSupported(`The model "${model.id}" is disabled.`);

    const input = { state: body.state, questions: body.questions };
    // What goes upstream is {model, state, questions}; the provider counts tokens of {state, questions}, and a
    // token is at least one byte, so these bytes bound the input tokens.
    const inputBytes = Buffer.byteLength(JSON.stringify(input), 'utf8');
    const { key, workspace } = authOf(res);
    const { requestId } = locals(res);
    const hold = await deps.holds.reserve(ownerOf(res), reservationFor(model, { inputBytes }));
    const deadlineAt = Date.now() + options.waitMs;

    // The job's id is made here, never from the request id (a caller may send its own X-Request-Id): the reply is
    // matched to its waiting caller by it.
    const payload = {
      requestId,
      callId: newId('evl'),
      workspaceId: workspace.id,
      apiKeyId: key.id,
      deadlineAt,
      model: model.id,
      request: input,
      replyTo: deps.evaluateReplies.channel,
    };
    const waiting = deps.evaluateReplies.wait(jobIdOf(EvaluateRun, payload));
    try {
      await scheduleEvaluate(deps.queues, payload);
    } catch (e) {
      waiting.cancel();
      await hold.release();
      throw errors.unavailable('The evaluation could not be queued; nothing was charged. Retry shortly.', e);
    }

    const stop = stopWaiting(res, deadlineAt);
    const waited = await Promise.race([
      waiting.reply.then((reply): Waited => ({ kind: 'replied', reply })),
      stop.promise,
    ]);
    stop.cancel();
    waiting.cancel();
    if (waited.kind !== 'replied' || res.writableEnded || res.destroyed) {
      await hold.release();
      if (waited.kind !== 'late') return;
      throw errors.upstreamTimeout(
        `The evaluation did not finish within ${options.waitMs / 1000} s; nothing was charged.`,
      );
    }
    const { reply } = waited;
    if (!('result' in reply)) {
      await hold.release();
      throw errors.internal(new Error(`evaluate.run broke in the worker (request ${requestId}); nothing was charged`));
    }
    const { result } = reply;
    if (!result.ok) {
      await hold.release();
      return refuse(result.error);
    }
    const { inputTokens, outputTokens } = result.usage;
    const charge = { cost: BigInt(result.cost), model: model.id, inputTokens, outputTokens };
    const charged = await hold.settle(charge);
    if (charged) recordSpend(deps.metrics, { ...charge, cost: charged });
    if (charged === null) {
      throw errors.unavailable('The evaluation could not be charged; nothing was charged. Retry shortly.');
    }
    const answer = {
      model: model.id,
      answers: result.answers,
      usage: result.usage,
      cost: { amount: toAmount(charged), currency: workspace.currency },
    };
    sendJson(res, 200, Buffer.from(JSON.stringify(answer)));
  };
}

function refuse(error: Extract<EvaluateRunResult, { ok: false }>['error']): never {
  // The worker writes these messages itself (never a provider's stack or secret); only its 500s stay hidden. The
  // status is the code's own, whatever the worker's build wrote.
  throw errors.fromWire(error);
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
