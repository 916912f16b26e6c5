// task.submit: hands a queued task to a provider. The model's routes to replicate and fal channels are tried in
// libs/upstream's order with failover; the first channel that accepts the job gets it, and the task becomes running
// with the provider's job id recorded (markSubmitted), then its first poll is added as a delayed job, unless the
// provider was asked for a webhook: then no poll is made (polling is only the fallback). The webhook's arrival
// records the result at the edge (or, for a job that ended otherwise, adds a poll there); a webhook that never comes
// leaves the task running unmoved, and the task-runner's reconciler polls it once it has waited
// TASK_POLL_WEBHOOK_FALLBACK (reconciler.ts).
//
// The one window no design closes: neither Replicate nor fal takes an idempotency key, so a worker that dies after
// the provider accepted the job but before markSubmitted committed leaves a job at the provider that nobody tracks,
// and the retried submit makes a second one. The customer is still charged once: money moves only with the task row.
import {
  TASK_OPERATIONS,
  isTaskOperation,
  type GenerationInput,
  type JobPayload,
  type TaskSubmit,
} from '@gensvc/contracts';
import { fileContentLink } from '@gensvc/auth';
import { fileRepository, taskRepository, type TaskRow } from '@gensvc/db';
import { isRetryable } from '@gensvc/errors';
import { isLastAttempt, type HandlerContext } from '@gensvc/queue';
import {
  toAppError,
  upstreamModelOf,
  withFailover,
  type CatalogRoute,
  type ProviderInput,
  type Submitted,
} from '@gensvc/upstream';
import { isTaskChannelKind, type TaskChannelKind } from '../providers/providers';
import { freshChannelsFirst } from './task-resubmit';
import { deadlineOf, enqueuePoll, failTask, pastDeadline, webhookUrlFor, type TaskHandlerDeps } from './task-steps';

export type SubmitOutcome =
  | { outcome: 'submitted'; channelId: string; upstreamId: string }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; reason: 'task_gone' | 'not_queued' | 'canceled_meanwhile' };

type Prepared = { input: ProviderInput } | { failure: { code: string; message: string } };

/** A route to a channel that speaks one of the task protocols. */
type TaskRoute = CatalogRoute & { channel: { kind: TaskChannelKind } };
const isTaskRoute = (route: CatalogRoute): route is TaskRoute => isTaskChannelKind(route.channel.kind);

export function taskSubmit(deps: TaskHandlerDeps) {
  const { db, catalog, breaker, providers, logger } = deps;

  return async (payload: JobPayload<typeof TaskSubmit>, ctx: HandlerContext): Promise<SubmitOutcome> => {
    const task = await taskRepository.find(db, payload.taskId);
    if (!task) return { outcome: 'skipped', reason: 'task_gone' };
    const log = logger.child({ taskId: task.id, workspaceId: task.workspaceId, jobId: ctx.job.id });
    if (task.status !== 'queued' || task.upstreamId !== null) {
      // A run that died between markSubmitted and adding the first poll: the poll is owed (or, if that run asked for a
      // webhook, a poll ahead of it: the webhook or this poll, whichever comes first, records the result once).
      if (task.status === 'running' && task.output === null)
        await enqueuePoll(deps, task, task.attempts, { ensure: true });
      return { outcome: 'skipped', reason: 'not_queued' };
    }
    const fail = async (code: string, message: string): Promise<SubmitOutcome> =>
      (await failTask(deps, task, { code, message }, log))
        ? { outcome: 'failed', code }
        : { outcome: 'skipped', reason: 'canceled_meanwhile' };
    if (pastDeadline(task))
      return fail('upstream_timeout', `The task could not be submitted to the provider within ${deadlineOf(task)}.`);

    const operation = isTaskOperation(task.operation) ? TASK_OPERATIONS[task.operation] : null;
    if (!operation)
      return fail('internal_error', `The task's operation "${task.operation}" is not one this service runs.`);
    const model = await catalog.model(task.model);
    if (!model?.enabled || model.kind !== operation.kind)
      return fail('upstream_error', `The model "${task.model}" is no longer available.`);
    const routes = freshChannelsFirst(model.routes.filter(isTaskRoute), task);

    const prepared = await prepareInput(deps, task, operation.kind);
    if ('failure' in prepared) return fail(prepared.failure.code, prepared.failure.message);

    let submitted: { route: TaskRoute; job: Submitted; webhook: boolean };
    try {
      submitted = await withFailover({
        routes,
        breaker,
        call: async (route) => {
          const webhookUrl = webhookUrlFor(deps.config, route.channel.kind, task.id);
          const job = await providers[route.channel.kind].submit({
            channel: route.channel,
            upstreamModel: upstreamModelOf(route, model),
            input: prepared.input,
            signal: ctx.signal,
            webhookUrl,
          });
          return { route, job, webhook: webhookUrl !== undefined };
        },
        // Shutdown says nothing about the channel: its half-open trial is given back and the job goes back to the
        // queue.
        isAbort: () => ctx.signal?.aborted === true,
        onFailure: (route, err) =>
          log.warn(
            { channel: route.channel.name, err: err instanceof Error ? err.message : String(err) },
            'channel refused the task',
          ),
      });
    } catch (e) {
      if (ctx.signal?.aborted) throw e;
      const error = toAppError(e);
      // The provider judged the request itself: no channel would take it, now or later.
      if (error.code === 'invalid_input' || error.code === 'content_rejected') return fail(error.code, error.message);
      const why = error.cause instanceof Error ? error.cause.message : error.message;
      if (!isRetryable(error) || isLastAttempt(ctx.job))
        return fail('upstream_error', `No provider channel could take the task: ${why}`);
      log.warn({ err: why, attempt: ctx.job.attemptsMade + 1 }, 'no channel took the task; the job will retry');
      throw error;
    }

    const { route, job } = submitted;
    const submittedJob = { channelId: route.channel.id, upstreamId: job.upstreamId, upstreamUrls: job.urls };
    const recorded = await taskRepository.markSubmitted(db, task.id, submittedJob);
    if (!recorded) {
      // Canceled (or timed out) while the provider was being called: the job just made there is ours to stop.
      log.info(
        { channel: route.channel.name, upstreamId: job.upstreamId },
        'task moved on while it was being submitted; canceling the provider job',
      );
      await providers[route.channel.kind]
        .cancel({ channel: route.channel, upstreamId: job.upstreamId, urls: job.urls })
        .catch((err: unknown) =>
          log.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not cancel the provider job'),
        );
      return { outcome: 'skipped', reason: 'canceled_meanwhile' };
    }
    // With a webhook coming, no poll: the reconciler's is the fallback (see the header).
    // markSubmitted counted this job's first poll after the earlier jobs' (attempts + 1).
    const firstPollMs = submitted.webhook ? null : await enqueuePoll(deps, task, task.attempts + 1);
    log.info(
      { channel: route.channel.name, upstreamId: job.upstreamId, firstPollMs, webhook: submitted.webhook },
      'task submitted',
    );
    return { outcome: 'submitted', channelId: route.channel.id, upstreamId: job.upstreamId };
  };
}

/**
 * The provider's input: the request as the edge validated it, with a workspace file reference turned into a fresh
 * signed link (valid an hour, the provider fetches it at once), after checking the file is still there.
 */
async function prepareInput(deps: TaskHandlerDeps, task: TaskRow, kind: ProviderInput['kind']): Promise<Prepared> {
  const input = task.input as unknown as GenerationInput | null;
  if (!input || typeof input.prompt !== 'string' || !Number.isInteger(input.width) || !Number.isInteger(input.height)) {
    return { failure: { code: 'internal_error', message: "The task's input could not be read." } };
  }
  let imageUrl: string | undefined;
  if (input.image && 'file_id' in input.image) {
    const fileId = input.image.file_id;
    const file = await fileRepository.get(deps.db, task.workspaceId, fileId);
    if (!file) return { failure: { code: 'invalid_input', message: `The input file ${fileId} no longer exists.` } };
    imageUrl = (
      await fileContentLink(deps.config.publicBaseUrl, deps.config.signingSecret, {
        fileId,
        workspaceId: task.workspaceId,
      })
    ).url;
  } else if (input.image && 'url' in input.image) {
    imageUrl = input.image.url;
  }
  return {
    input: {
      kind,
      prompt: input.prompt,
      width: input.width,
      height: input.height,
      ...(kind === 'video' && input.duration_seconds !== undefined && { durationSeconds: input.duration_seconds }),
      ...(imageUrl !== undefined && { imageUrl }),
    },
  };
}
