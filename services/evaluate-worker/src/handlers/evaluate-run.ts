// evaluate.run: ask the model's channels (withFailover), check the answer, and publish the result (answers, usage
// and what they cost) on the job's reply channel, where the edge process that holds the caller is listening. The
// worker charges nothing: the edge charges the cost through its budget lease when the reply reaches it while the
// caller is still waiting (see the edge's routes/evaluate/evaluate.ts), so an answer nobody receives costs nothing.
//
// Outcomes the caller should hear (the provider failed, the model went away, the deadline passed) are results, so
// their status and code reach the edge intact. Only a broken worker fails the job; it publishes `failed` first.
import type { EvaluateRun, EvaluateReply, EvaluateRunResult, JobPayload } from '@gensvc/contracts';
import { AppError, errors } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import type { HandlerContext } from '@gensvc/queue';
import {
  type CircuitBreaker,
  UpstreamFailure,
  costOf,
  toAppError,
  upstreamModelOf,
  withFailover,
  type Catalog,
  type CatalogModel,
  type CatalogRoute,
  type UpstreamClient,
} from '@gensvc/upstream';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { InvalidAnswer, checkAnswer } from '../upstream/answer-check';
import { callEvaluate } from '../upstream/evaluate-client';

export interface EvaluateRunDeps {
  catalog: Catalog;
  /** Per process: every job of this worker shares what it learns about the channels. */
  breaker: CircuitBreaker;
  client: UpstreamClient;
  logger: Logger;
  /** Publishes a reply on a Redis channel (the worker's command connection). */
  publish: (channel: string, message: string) => Promise<unknown>;
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
    // Made only when something is logged: a pino child serialises its bindings (and redaction) when it is made, for
    // every job, and a job that goes well logs nothing.
    let child: Logger | undefined;
    const log = () => (child ??= deps.logger.child({ request_id: payload.requestId, model: payload.model }));
    const reply = (message: EvaluateReply) =>
      deps
        .publish(payload.replyTo, JSON.stringify(message))
        .catch((err) => log().error({ err }, 'could not publish the reply; the edge answers 504 at its deadline'));
    let outcome: Answered | AppError;
    try {
      outcome = await ask(deps, payload, now, log, ctx.signal);
    } catch (e) {
      // Shutdown: the job goes back to the queue for the worker that re-runs it; the edge keeps waiting.
      if (!ctx.signal?.aborted) await reply({ id: ctx.job.id!, failed: true });
      throw e;
    }
    let result: EvaluateRunResult;
    if (outcome instanceof AppError) {
      result = failed(outcome);
    } else {
      const { model, answers, usage } = outcome;
      result = { ok: true, answers, usage, cost: costOf(model, usage).toString() };
    }
    // Sent, not awaited: BullMQ marks the job done on the same connection right after, and Redis runs a connection's
    // commands in order, so the reply still goes out before the job is done, without waiting a round trip for it.
    void reply({ id: ctx.job.id!, result });
    return result;
  };
}

async function ask(
  deps: EvaluateRunDeps,
  payload: Payload,
  now: () => number,
  log: () => Logger,
  signal?: AbortSignal,
): Promise<Answered | AppError> {
  if (now() >= payload.deadlineAt) return pastDeadline('waited past its deadline before it could run');
  const model = await deps.catalog.model(payload.model);
  if (!model) return errors.modelNotFound(payload.model);
  if (model.kind !== 'evaluation' || !model.enabled)
    return errors.modelNotSupported(`The model "${model.id}" no longer serves evaluations.`);

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
      if (e instanceof UpstreamFailure && e.kind === 'timeout' && timeoutMs < channel.timeoutMs)
        throw new DeadlinePassed();
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
      onFailure: (route, err) =>
        log().warn(
          { channel: route.channel.name, err: err instanceof Error ? err.message : String(err) },
          'channel failed',
        ),
    });
    return { ok: true, model, ...checked };
  } catch (e) {
    if (signal?.aborted) throw e;
    const error = toAppError(e);
    return error.cause instanceof DeadlinePassed ? pastDeadline('did not finish before its deadline') : error;
  }
}

const pastDeadline = (what: string) => errors.upstreamTimeout(`The evaluation ${what}; nothing was charged.`);

function failed(error: AppError): EvaluateRunResult {
  trace.getActiveSpan()?.setStatus({ code: SpanStatusCode.ERROR, message: error.code });
  return { ok: false, error: { status: error.status, code: error.code, message: error.message, param: error.param } };
}
