// POST /v1/provider-webhooks/{replicate|fal}/{task id}: where Replicate and fal report a task's job ended,
// when the task-runner asked them to (PROVIDER_WEBHOOK_BASE_URL set). The signature is verified as each provider
// documents it (libs/webhooks provider-webhooks.ts) over the raw body, before anything of the body is read; an
// unsigned or badly signed call is 401 and changes nothing.
//
// A verified webhook whose body says the job succeeded, with files we can read, IS the task's result: Replicate's body
// is the prediction (GET /v1/predictions/{id}'s object), fal's carries the result in `payload`. Each is read by its
// protocol's own parser (libs/upstream task-providers: the one the poll reads status answers with), and the result is
// recorded here as the poll records it (recordWebhookResult beside the poll's recordTaskResult, libs/upstream: the
// output, the charge, the spend metric, the archive jobs): the task has no poll job (the task-runner makes none when
// it asks for a webhook) and the provider is never read for it. It is recorded only for a task that is running with
// no output yet, of this provider, whose recorded provider job id is the one the provider SIGNED (the body's id for
// Replicate, x-fal-webhook-request-id for fal); the URL's task id is not signed, so another job's webhook sent to
// this task's URL records nothing. The provider is answered (204) after the recording has committed and the archive
// jobs are added: a 2xx says the result is kept, so an edge that dies before it leaves the provider retrying (both
// providers retry a webhook that got no 2xx), and the task-runner's reconciler polls a task left waiting longer than
// TASK_POLL_WEBHOOK_FALLBACK, which finishes it as a poll always did. A replay, or a poll racing the webhook, charges
// nothing: the recording is conditional (running, output null, under the row's lock), and only its winner adds the
// archive jobs. The URL's query carries the task's trace (traceQueryOf, put there at submit): the recording and the
// jobs after it are in the task's one trace.
//
// Everything else is a hint that the job ended, answered first, and the task of this job is polled now (a poll added
// with `ended`, or its waiting one promoted): a failed or canceled job (the poll reads why from the provider, with
// what the body lacks: fal's status code and error type), a body we cannot read, fal's `payload_error` (a result too
// large to send), or a task still submitting (its provider id not recorded yet: the row is looked at again for a few
// seconds, until the submit has recorded it and the webhook can be matched to the job). A webhook of another job
// brings nothing forward.
//
// Nothing here makes a request to an address a caller chose: the only outbound call is fal's JWKS, at the
// operator's FAL_WEBHOOK_JWKS_URL (an operator setting, like a channel's base URL), made through libs/outbound.
import { taskRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { contextFromQuery, inTraceOf, scheduleEndedPoll, taskJobRef, type EnsureJobOutcome } from '@gensvc/queue';
import {
  falWebhookState,
  recordWebhookResult,
  replicateWebhookState,
  type JobState,
  type ProviderOutput,
} from '@gensvc/upstream';
import { ProviderWebhookError, verifyFalWebhook, verifyReplicateWebhook } from '@gensvc/webhooks';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { declaredTooLarge } from '../../http/declared-length';
import { formatBytes } from '../../http/errors';
import { readRawBody } from '../../http/json-body';
import { locals } from '../../http/request-context';
import { falKeyCache } from './fal-keys';

/** The body as JSON; null when it is not (fal's body is verified as bytes, and read only for its result). */
function jsonOrNull(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
}

/** A provider's webhook body: a prediction or a fal result with its images' URLs. */
const BODY_LIMIT_BYTES = 1024 * 1024;
/** A still-submitting task is rechecked after these waits: its submit records the provider's id, late under load. */
const SUBMIT_LOOKS_MS = [100, 250, 1_000, 3_000];

/**
 * The route, mounted on `router`, and close(): resolves once the looks it started (bringPollForward) have ended (call
 * it after HTTP has stopped).
 */
export function providerWebhookRoutes(deps: EdgeDeps): { router: express.Router; close(): Promise<void> } {
  /** Tasks whose poll a webhook is bringing forward now (this process), and that work: shutdown waits for it. */
  const looking = new Map<string, Promise<void>>();
  const falKeys = falKeyCache(deps.config.providerWebhooks.falJwksUrl, {
    allowCidrs: deps.config.outbound.allowCidrs,
    ...deps.outbound,
  });

  const receive = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const { provider, taskId } = req.params as { provider: string; taskId: string };
      const { baseUrl, replicateSecret, falUserId } = deps.config.providerWebhooks;
      const on =
        baseUrl !== undefined &&
        ((provider === 'fal' && falUserId !== undefined) ||
          (provider === 'replicate' && replicateSecret !== undefined));
      if (!on || taskId.length > 64) throw errors.notFound('No such webhook.');
      if (declaredTooLarge(req, BODY_LIMIT_BYTES)) throw errors.payloadTooLarge(formatBytes(BODY_LIMIT_BYTES));
      const raw = await readRawBody(req, { limitBytes: BODY_LIMIT_BYTES, timeouts: deps.config.http });

      /**
       * The provider's job id as the provider signed it, and what the body says of that job (null: nothing we read).
       */
      let upstreamId: string;
      let state: JobState | null;
      try {
        if (provider === 'replicate') {
          verifyReplicateWebhook(raw, req.headers, replicateSecret!);
          const body = JSON.parse(raw.toString('utf8')) as { id?: unknown };
          if (typeof body.id !== 'string') throw errors.invalidRequest('The prediction has no id.');
          upstreamId = body.id;
          state = replicateWebhookState(body);
        } else {
          let keys = await falKeys.get(false);
          try {
            upstreamId = verifyFalWebhook(raw, req.headers, keys, { userId: falUserId! }).requestId;
          } catch (e) {
            if (!(e instanceof ProviderWebhookError) || e.reason !== 'bad_signature') throw e;
            keys = await falKeys.get(true);
            upstreamId = verifyFalWebhook(raw, req.headers, keys, { userId: falUserId! }).requestId;
          }
          state = falWebhookState(jsonOrNull(raw), upstreamId);
        }
      } catch (e) {
        if (e instanceof ProviderWebhookError) throw errors.invalidWebhookSignature(e.message);
        if (e instanceof SyntaxError) throw errors.invalidJson('The webhook body is not JSON.');
        throw e;
      }

      // The result, when the body carries it and it is this task's: recorded before the answer (see the header).
      if (state?.state === 'succeeded' && (await recordResult(req, res, provider, taskId, upstreamId, state.outputs)))
        return void res.status(204).end();

      // Otherwise a hint: the reconciler's fallback poll finishes the task whatever happens here, so the provider is
      // answered first (a task that is not this job's, or that moved on, is answered as done: there is nothing for it
      // to retry) and the poll made after, without holding its request. One look per task at a time, so replays
      // cannot pile up loops.
      res.status(204).end();
      if (looking.has(taskId)) return;
      // The request's child logger is made on first use (locals): looked up when the line is written.
      const look = bringPollForward(taskId, upstreamId)
        .then(
          (poll) =>
            locals(res).log.info({ taskId, provider, poll: poll ?? 'none' }, 'provider webhook: poll brought forward'),
          (err: unknown) =>
            locals(res).log.warn(
              { taskId, provider, err },
              'provider webhook: the poll could not be brought forward; the fallback poll will run',
            ),
        )
        .finally(() => looking.delete(taskId));
      looking.set(taskId, look);
    } catch (e) {
      next(e);
    }
  };

  /**
   * Records a webhook's result for the task when the task is this job's and waits for it: running, no output yet,
   * its recorded provider job id the signed one, its channel of this provider (so the parser that read the body is
   * the task's protocol's). One Postgres statement checks all that on the row and records the result
   * (recordWebhookResult: the poll's own transition, then the archive adds), in the task's trace (the URL's query).
   * True when the webhook is dealt with: recorded, or this job's task has its result already (a replay of this
   * webhook, or a poll was first) or has ended: nothing to bring forward. False: not this job's task, or one still
   * submitting, which take the hint's path. A failure (Postgres, Redis) is the request's: answered 5xx, so the
   * provider sends the webhook again.
   */
  const recordResult = async (
    req: Request,
    res: Response,
    provider: string,
    taskId: string,
    upstreamId: string,
    outputs: ProviderOutput[],
  ): Promise<boolean> => {
    const log = locals(res).log.child({ taskId, provider });
    return (
      (await inTraceOf(contextFromQuery(req.query), () =>
        recordWebhookResult(deps, { taskId, upstreamId, provider }, outputs, log),
      )) !== 'not_this'
    );
  };

  /**
   * The task's current poll, now, when the task is running this job with no result yet (its recorded provider job id
   * the signed one): added with `ended`, or promoted when it waits delayed (scheduleEndedPoll). The poll reads the
   * task and the provider itself, so it decides as any poll does. A task still queued without a provider id is one
   * whose submit is in flight (the provider answered it, and its job may end before the task-runner has recorded the
   * id): its row is looked at again after each of SUBMIT_LOOKS_MS, until the id is there to be matched. Anything else
   * (another job's task, one that moved on) gets nothing. What the poll's job did (null: nothing).
   */
  const bringPollForward = async (taskId: string, upstreamId: string): Promise<EnsureJobOutcome | null> => {
    for (let look = 0; ; look++) {
      const task = await taskRepository.find(deps.db, taskId);
      if (task?.status === 'running' && task.upstreamId === upstreamId && task.output === null)
        return scheduleEndedPoll(deps.queues, taskJobRef(task), task.attempts);
      const submitting = task?.status === 'queued' && task.upstreamId === null;
      if (!submitting || look === SUBMIT_LOOKS_MS.length) return null;
      await new Promise((r) => setTimeout(r, SUBMIT_LOOKS_MS[look]));
    }
  };
  const router = express.Router({ caseSensitive: true });
  router.post('/v1/provider-webhooks/:provider/:taskId', receive);
  return { router, close: async () => void (await Promise.all(looking.values())) };
}
