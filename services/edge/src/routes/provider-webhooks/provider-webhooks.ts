// POST /v1/provider-webhooks/{replicate|fal}/{task id}: where Replicate and fal report a task's job ended (issue 12),
// when the task-runner asked them to (PROVIDER_WEBHOOK_BASE_URL set). The signature is verified as each provider
// documents it (libs/webhooks provider-webhooks.ts) over the raw body, before anything of the body is read; an
// unsigned or badly signed call is 401 and changes nothing.
//
// A verified webhook whose body says the job succeeded, with files we can read, IS the task's result: Replicate's body
// is the prediction (GET /v1/predictions/{id}'s object), fal's carries the result in `payload`. Each is read by its
// protocol's own parser (libs/upstream task-providers: the one the poll reads status answers with), and the result is
// recorded here as the poll records it (recordWebhookResult beside the poll's recordTaskResult, libs/upstream: the
// output, the charge, the spend metric, the archive jobs), which also removes the task's waiting fallback poll: no
// task.poll job and no provider read for that task. It is recorded only for a task that is running with no output yet, of this provider, whose recorded provider job id is
// the one the provider SIGNED (the body's id for Replicate, x-fal-webhook-request-id for fal); the URL's task id is
// not signed, so another job's webhook sent to this task's URL records nothing. The provider is answered (204) after
// the recording has committed and the archive jobs are added: a 2xx says the result is kept, so an edge that dies
// before it leaves the provider retrying (both providers retry a webhook that got no 2xx) and the task's fallback
// poll in place, which finishes the task as it always did. A replay, or the poll racing the webhook, charges nothing:
// the recording is conditional (running, output null, under the row's lock), and only its winner adds the archive
// jobs.
//
// Everything else is a hint that the job ended, and makes the task's next poll happen now (its delayed poll job is
// promoted), answered first: a failed or canceled job (the poll reads why from the provider, with what the body
// lacks: fal's status code and error type), a body we cannot read, fal's `payload_error` (a result too large to
// send), a task still submitting (its provider id not recorded yet, so the webhook cannot be matched to it), or a
// mismatch. A lost webhook (the edge down, the provider giving up) costs only the wait of the fallback poll
// (TASK_POLL_WEBHOOK_FALLBACK).
//
// Nothing here makes a request to an address a caller chose: the only outbound call is fal's JWKS, at the
// operator's FAL_WEBHOOK_JWKS_URL (an operator setting, like a channel's base URL), made through libs/outbound.
import { taskRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { inTraceOf, pollTraceContext, promotePoll } from '@gensvc/queue';
import { falWebhookState, recordWebhookResult, replicateWebhookState, type JobState, type ProviderOutput } from '@gensvc/upstream';
import { ProviderWebhookError, verifyFalWebhook, verifyReplicateWebhook } from '@gensvc/webhooks';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { EdgeDeps } from '../../deps';
import { declaredTooLarge } from '../../http/declared-length';
import { mountRoutes, type RouteSpec } from '../../http/hot-routes';
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
/**
 * When no poll waits yet, looked for again after these waits: a poll in flight adds the next one within moments; a
 * submit in flight adds poll 1 once its record of the provider's id has committed, which under load takes longer.
 */
const POLL_LOOKS_MS = [250];
const SUBMIT_LOOKS_MS = [100, 250, 1_000, 3_000];

/**
 * The route, mounted on `router` and as `routes` (the app also runs it as a hot route: no other route takes its path),
 * and close(): resolves once the promotions it started have ended (call it after HTTP has stopped).
 */
export function providerWebhookRoutes(deps: EdgeDeps): { router: express.Router; routes: RouteSpec[]; close(): Promise<void> } {
  /** Tasks whose poll a webhook is bringing forward now (this process), and that work: shutdown waits for it. */
  const promoting = new Map<string, Promise<void>>();
  const falKeys = falKeyCache(deps.config.providerWebhooks.falJwksUrl, { allowCidrs: deps.config.outbound.allowCidrs, ...deps.outbound });

  const receive = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const { provider, taskId } = req.params as { provider: string; taskId: string };
      const { baseUrl, replicateSecret, falUserId } = deps.config.providerWebhooks;
      const on = baseUrl !== undefined && ((provider === 'fal' && falUserId !== undefined) || (provider === 'replicate' && replicateSecret !== undefined));
      if (!on || taskId.length > 64) throw errors.notFound('No such webhook.');
      if (declaredTooLarge(req, BODY_LIMIT_BYTES)) throw errors.payloadTooLarge(formatBytes(BODY_LIMIT_BYTES));
      const raw = await readRawBody(req, { limitBytes: BODY_LIMIT_BYTES, timeouts: deps.config.http });

      /** The provider's job id as the provider signed it, and what the body says of that job (null: nothing we read). */
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
      if (state?.state === 'succeeded' && (await recordResult(res, provider, taskId, upstreamId, state.outputs))) return void res.status(204).end();

      // Otherwise a hint: the fallback poll finishes the task whatever happens here, so the provider is answered first
      // (a task that is not this job's, or that moved on, is answered as done: there is nothing for it to retry) and
      // the poll looked for after, without holding its request. One look per task at a time, so replays cannot pile
      // up loops.
      res.status(204).end();
      if (promoting.has(taskId)) return;
      // The request's child logger is made on first use (locals): looked up when the line is written.
      const promotion = bringPollForward(taskId, upstreamId)
        .then(
          (promoted) => locals(res).log.info({ taskId, provider, promoted }, 'provider webhook: poll brought forward'),
          (err: unknown) => locals(res).log.warn({ taskId, provider, err }, 'provider webhook: the poll could not be brought forward; the fallback poll will run'),
        )
        .finally(() => promoting.delete(taskId));
      promoting.set(taskId, promotion);
    } catch (e) {
      next(e);
    }
  };

  /**
   * Records a webhook's result for the task when the task is this job's and waits for it: running, no output yet,
   * its recorded provider job id the signed one, its channel of this provider (so the parser that read the body is
   * the task's protocol's). One Redis read (the trace the fallback poll carries), then one Postgres statement that
   * checks all that on the row and records the result (recordWebhookResult: the poll's own transition, and the
   * archive adds and the fallback poll's removal in one Redis write after it). True when the webhook is dealt with:
   * recorded, or this job's task has its result already (a replay of this webhook, or its poll was first) or has
   * ended: nothing to bring forward. False: not this job's task, or one still submitting, which take the promotion
   * path. A failure (Postgres, Redis) is the request's: answered 5xx, so the provider sends the webhook again, and
   * the fallback poll stays unless its removal was written.
   */
  const recordResult = async (res: Response, provider: string, taskId: string, upstreamId: string, outputs: ProviderOutput[]): Promise<boolean> => {
    // First, so that the recording and the archive and callback jobs after it stay in the task's one trace: the
    // task's trace, from its fallback poll (poll 1, the one a webhook finds waiting).
    const taskTrace = await pollTraceContext(deps.queues, { taskId }, 1);
    const log = locals(res).log.child({ taskId, provider });
    return (await inTraceOf(taskTrace, () => recordWebhookResult(deps, { taskId, upstreamId, provider }, outputs, log))) !== 'not_this';
  };

  /**
   * First, with no store read: the poll that waits for a webhook is poll 1 (delayed by the fallback wait; the poll
   * jobs' ids are the task's and the attempt's), so promoting it by id is one Redis round trip, and it is what
   * almost every webhook finds (issue 12: the task row's read was one Postgres statement per task). A promoted poll
   * reads the task and the provider itself, so one brought forward for a task that moved on, or by another job's
   * webhook (the URL's task id is not signed), decides nothing: it asks the provider, and a job still running is
   * polled on the schedule from then on, as without webhooks. When none waits, the task row says what to look for: a task still queued
   * without a provider id is one whose submit is in flight (the provider answered it and its job may end before the
   * task-runner has recorded the id and added poll 1), so poll 1 is waited for; a running task of this job, its
   * current poll. A submitting task's webhook cannot be matched to its job yet (it is this account's, but which of
   * its jobs is not known), so a replayed one may only bring a poll forward, never decide anything.
   */
  const bringPollForward = async (taskId: string, upstreamId: string): Promise<boolean> => {
    if (await promotePoll(deps.queues, { taskId }, 1, [])) return true;
    const task = await taskRepository.find(deps.db, taskId);
    const submitting = task?.status === 'queued' && task.upstreamId === null;
    const live = task?.status === 'running' && task.upstreamId === upstreamId && task.output === null;
    if (!task || !(live || submitting)) return false;
    return promotePoll(deps.queues, { taskId }, submitting ? 1 : task.attempts, submitting ? SUBMIT_LOOKS_MS : POLL_LOOKS_MS);
  };
  const routes: RouteSpec[] = [{ path: '/v1/provider-webhooks/:provider/:taskId', handlers: [receive] }];
  const router = express.Router({ caseSensitive: true });
  mountRoutes(router, routes);
  return { router, routes, close: async () => void (await Promise.all(promoting.values())) };
}
