// evaluate.run: ask the model's channels (withFailover), check the answer, then settle the reservation to the cost
// of the reported usage, or release it. Settling is the commit point shared with the edge (see the edge's
// routes/evaluate/evaluate.ts): when the edge has already given the reservation back because it stopped waiting,
// the settle finds nothing held and the answer is dropped uncharged.
//
// Outcomes the caller should hear (the provider failed, the model went away, the deadline passed) are returned as
// results, so their status and code reach the edge intact. Only a broken worker fails the job; it releases first.
import { EvaluateRun, type EvaluateRunResult, type JobPayload } from '@gensvc/contracts';
import { billingRepository, type Db } from '@gensvc/db';
import { AppError, errors } from '@gensvc/errors';
import { recordSpend, type Logger, type Metrics } from '@gensvc/observability';
import type { HandlerContext } from '@gensvc/queue';
import { CircuitBreaker, UpstreamFailure, costOf, toAppError, upstreamModelOf, withFailover, type Catalog, type CatalogModel, type CatalogRoute, type UpstreamClient } from '@gensvc/upstream';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { InvalidAnswer, checkAnswer } from '../upstream/answer-check';
import { callEvaluate } from '../upstream/evaluate-client';

export interface EvaluateRunDeps {
  db: Db;
  catalog: Catalog;
  /** Per process: every job of this worker shares what it learns about the channels. */
  breaker: CircuitBreaker;
  client: UpstreamClient;
  logger: Logger;
  /** Tokens and spend by model at each settlement (main.ts passes the process's; tests may leave it out). */
  metrics?: Metrics;
  now?: () => number;
}

type Payload = JobPayload<typeof EvaluateRun>;
type Answered = { ok: true; model: CatalogModel } & ReturnType<typeof checkAnswer>;

/** The caller's deadline passed before (or while) a channel was called: says nothing about the channel. */
class DeadlinePassed extends UpstreamFailure {
  constructor() {
    super("the caller's deadline passed", 'timeout', false);
  }
}

export function evaluateRun(deps: EvaluateRunDeps) {
  const now = deps.now ?? Date.now;
  return async (payload: Payload, ctx: HandlerContext): Promise<EvaluateRunResult> => {
    const log = deps.logger.child({ request_id: payload.requestId, reservation_id: payload.reservationId, model: payload.model });
    let outcome: Answered | AppError;
    try {
      outcome = await ask(deps, payload, now, log, ctx.signal);
    } catch (e) {
      // Shutdown: the job goes back to the queue and its reservation stays held for the worker that re-runs it.
      if (ctx.signal?.aborted) throw e;
      await billingRepository.release(deps.db, payload.reservationId).catch((err) => log.error({ err }, 'could not release'));
      throw e;
    }
    if (outcome instanceof AppError) {
      await billingRepository.release(deps.db, payload.reservationId);
      return failed(outcome);
    }
    const { model, answers, usage } = outcome;
    const settled = await billingRepository
      .settle(deps.db, payload.reservationId, { cost: costOf(model, usage), model: model.id, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens })
      .catch(async (e: unknown) => {
        // Not settled (or not known to be): give the hold back rather than leave it to expire; a settle that did
        // commit makes this release a no-op.
        await billingRepository.release(deps.db, payload.reservationId).catch((err) => log.error({ err }, 'could not release'));
        throw e;
      });
    if (!settled) {
      log.warn({}, 'answer arrived after the caller stopped waiting; not charged');
      return failed(errors.upstreamTimeout('The answer arrived after the caller stopped waiting; nothing was charged.'));
    }
    if (deps.metrics) recordSpend(deps.metrics, { model: model.id, cost: settled.charged, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens });
    return { ok: true, answers, usage, charged: settled.charged.toString() };
  };
}

async function ask(deps: EvaluateRunDeps, payload: Payload, now: () => number, log: Logger, signal?: AbortSignal): Promise<Answered | AppError> {
  if (now() >= payload.deadlineAt) return pastDeadline('waited past its deadline before it could run');
  const model = await deps.catalog.model(payload.model);
  if (!model) return errors.modelNotFound(payload.model);
  if (model.kind !== 'evaluation' || !model.enabled) return errors.modelNotSupported(`The model "${model.id}" no longer serves evaluations.`);

  const { questions } = payload.request;
  const call = async (route: CatalogRoute) => {
    const remaining = payload.deadlineAt - now();
    if (remaining <= 0) throw new DeadlinePassed();
    const { channel } = route;
    const body = JSON.stringify({ model: upstreamModelOf(route, model), ...payload.request });
    const timeoutMs = Math.min(channel.timeoutMs, remaining);
    let raw: unknown;
    try {
      raw = await callEvaluate(deps.client, { channel, body, timeoutMs, signal });
    } catch (e) {
      if (e instanceof UpstreamFailure && e.kind === 'timeout' && timeoutMs < channel.timeoutMs) throw new DeadlinePassed();
      throw e;
    }
    try {
      return checkAnswer(questions, raw);
    } catch (e) {
      if (!(e instanceof InvalidAnswer)) throw e;
      // The channel answered, wrongly: no other channel is asked, but the channel's health suffers.
      throw new UpstreamFailure(e.message, 'invalid_response', false);
    }
  };
  try {
    const checked = await withFailover({
      routes: model.routes,
      breaker: deps.breaker,
      call,
      // Neither the deadline nor shutdown says anything about the channel: its half-open trial is given back.
      isAbort: (e) => e instanceof DeadlinePassed || signal?.aborted === true,
      onFailure: (route, err) => log.warn({ channel: route.channel.name, err: err instanceof Error ? err.message : String(err) }, 'channel failed'),
    });
    return { ok: true, model, ...checked };
  } catch (e) {
    if (signal?.aborted) throw e;
    const error = toAppError(e);
    return error.cause instanceof DeadlinePassed ? pastDeadline('did not finish before its deadline') : error;
  }
}

const pastDeadline = (what: string) =>
  errors.upstreamTimeout(`The evaluation ${what}; nothing was charged.`);

function failed(error: AppError): EvaluateRunResult {
  trace.getActiveSpan()?.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
  return { ok: false, error: { status: error.status, code: error.code, message: error.message, param: error.param } };
}
