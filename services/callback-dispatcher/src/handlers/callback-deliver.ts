// callback.deliver: one attempt at POSTing a finished task's envelope to its callback_url (spec §6, DESIGN.md §4).
//
// Each attempt is a job of its own, [taskId, attempt]; attempt numbers keep increasing across redeliveries and a
// round of attempts starts at Task.callbackRoundStart. The j-th attempt of a round (0-based) runs
// config.callbacks.retryScheduleMs[j] after the previous one failed (index 0 is the round's first job, made undelayed
// by whoever made the callback due); the failure of the round's last one parks the delivery.
//
// The receiver's failures (non-2xx, no answer within the timeout, a redirect, an address refused at delivery time)
// are outcomes, recorded as attempts and never thrown; only Postgres and Redis errors throw, and the queue retries
// those (CallbackDeliver.retry). An attempt's row is written once, after the request ((taskId, attempt) unique), so:
//  - a job whose attempt is already recorded sends nothing. It re-applies the outcome of the round's last recorded
//    attempt instead (delivered, parked, or the next job ensured), which a run that died between recording and
//    scheduling left undone. The reconciler re-applies it the same way (applyAttempt below) for a pending delivery
//    whose chain of jobs vanished (Redis flushed). What follows an attempt is decided by delivery-decision.ts.
//  - a run that dies after sending but before recording leaves no row: the attempt is sent again under the same
//    number and the same SVC-Delivery-Id, and the receiver de-duplicates.
import type { CallbackDeliver, JobPayload } from '@gensvc/contracts';
import {
  callbackRepository,
  taskRepository,
  type Db,
  type DeliveryAttemptEntry,
  type DeliveryUpdate,
  type TaskRow,
} from '@gensvc/db';
import { isOutboundError, postChecked, readHead, type OutboundError, type OutboundReason } from '@gensvc/outbound';
import { scheduleCallback, taskJobRef, type HandlerContext, type Queues } from '@gensvc/queue';
import { callbackSignatureHeaders, deliveryIdFor, newCallbackSecret, webhookIdFor } from '@gensvc/webhooks';
import { decideDelivery, isDeliveredStatus, type DeliveryStep, type RecordedAttempt } from '../delivery-decision';
import { deliveryBody } from '../delivery-envelope';
import type { DispatcherDeps } from '../deps';
import { Grouped } from '../grouped';

export type { DeliveryStep };

/**
 * Decides what follows a recorded attempt, for `task` as read after the attempt was recorded (a redelivery may have
 * started a new round while it was in flight), applies it to the task (conditionally: applying one outcome twice
 * changes nothing) and adds the next attempt's job when one is due. The handler calls it after each attempt; the
 * reconciler with the last recorded one.
 */
export async function applyAttempt(
  deps: { db: Db; queues: Queues; config: { callbacks: { retryScheduleMs: number[] } } },
  task: Pick<TaskRow, 'id' | 'workspaceId' | 'callbackState' | 'callbackRoundStart'> | null,
  recorded: RecordedAttempt,
  at: { now?: Date; endedAt?: number } = {},
): Promise<DeliveryStep> {
  if (!task) return { step: 'none', reason: 'not_pending' };
  const now = at.now ?? new Date();
  const then = decideDelivery(task, recorded, deps.config.callbacks.retryScheduleMs, {
    now: now.getTime(),
    endedAt: at.endedAt,
  });
  const step = deliveryUpdate(then, recorded);
  if (step) await taskRepository.recordDeliveryAttempt(deps.db, { taskId: task.id, decidedOn: task, step }, now);
  await scheduleNext(deps, task, then);
  return then;
}

/** How a step changes the task (taskRepository.recordDeliveryAttempt), or null when it changes nothing. */
function deliveryUpdate(then: DeliveryStep, recorded: RecordedAttempt): DeliveryUpdate | null {
  const { attempt } = recorded;
  if (then.step === 'delivered') return { attempt, to: 'delivered', at: recorded.createdAt };
  if (then.step === 'parked') return { attempt, to: 'parked' };
  // Moved, for the reconciler: a pending delivery that stops moving has lost its next job.
  if (then.step === 'retry') return { attempt, to: 'pending' };
  return null;
}

/** The next attempt's job, when the step is a retry (after the step was applied). */
async function scheduleNext(deps: { queues: Queues }, task: Pick<TaskRow, 'id' | 'workspaceId'>, then: DeliveryStep) {
  if (then.step === 'retry')
    await scheduleCallback(deps.queues, taskJobRef(task), then.attempt, { delayMs: then.delayMs });
}

export type DeliverOutcome =
  | { outcome: 'skipped'; reason: 'task_gone' | 'no_callback' | 'not_pending' | 'stale_round' | 'not_next' }
  | { outcome: 'attempted'; attempt: number; statusCode: number | null; error: string | null; then: DeliveryStep }
  /** This attempt had a row already: nothing was sent; the last recorded attempt's outcome was (re)applied. */
  | { outcome: 'already_recorded'; attempt: number; then: DeliveryStep }
  /** Sent, but a concurrent run of the same attempt recorded it first; that run applies the outcome. */
  | { outcome: 'raced'; attempt: number };

/** Kept of the receiver's answer, for the delivery log. */
const RESPONSE_HEAD_BYTES = 1024;
const USER_AGENT = 'gensvc-callbacks/1';
/** Refusals of the URL itself: at delivery time they mean the address policy said no (DNS rebinding, say). */
const ADDRESS_RULES: ReadonlySet<OutboundReason> = new Set(['scheme', 'userinfo', 'port', 'private_address']);

export function callbackDeliver(deps: DispatcherDeps) {
  const { config, db, logger, secrets: box } = deps;
  // Each attempt's read and record, grouped with the other attempts' in flight (grouped.ts).
  const contexts = new Grouped((reads: { taskId: string; now: Date }[]) =>
    callbackRepository.attemptContexts(db, box, reads),
  );
  const records = new Grouped((entries: { entry: DeliveryAttemptEntry; now: Date }[]) =>
    taskRepository.recordDeliveryAttempts(db, entries),
  );

  return async (payload: JobPayload<typeof CallbackDeliver>, ctx: HandlerContext): Promise<DeliverOutcome> => {
    const { taskId, attempt } = payload;
    const deliveryId = deliveryIdFor(taskId, attempt);
    // The attempt's fields on each line, without a child logger per attempt (pino serialises a child's bindings when
    // it is made; at the usual level most attempts log nothing, and build no line either).
    const bound = { taskId, attempt, deliveryId, jobId: ctx.job.id };
    const log = {
      info: (fields: object, msg: string) => logger.isLevelEnabled('info') && logger.info({ ...bound, ...fields }, msg),
      warn: (fields: object, msg: string) => logger.warn({ ...bound, ...fields }, msg),
    };

    // One read before sending (the task, its last attempt, the workspace's currency and secrets, the archived file)
    // and one write after it (the attempt, and its decision applied while the task is still as read). The attempt
    // starts when its context is read.
    const startedAt = new Date();
    const context = await contexts.call({ taskId, now: startedAt });
    if (!context) return { outcome: 'skipped', reason: 'task_gone' };
    const { task, last } = context;
    if (!task.callbackUrl) return { outcome: 'skipped', reason: 'no_callback' };
    if (task.callbackState !== 'pending') return { outcome: 'skipped', reason: 'not_pending' };
    // An attempt of a round a redelivery has since replaced (a delayed retry promoted late, say).
    if (attempt < task.callbackRoundStart) return { outcome: 'skipped', reason: 'stale_round' };

    if (last && attempt <= last.attempt) {
      // Nothing was in flight since the task was read: no re-read.
      const then = await applyAttempt(deps, task, last);
      log.info({ lastAttempt: last.attempt, then }, 'callback: attempt already recorded; nothing sent');
      return { outcome: 'already_recorded', attempt, then };
    }
    // Attempts of a round run one after another: a job beyond the next one would leave a gap in the round's count.
    // The job of the next attempt exists or is re-made by the reconciler; this one is not it.
    const next = Math.max(task.callbackRoundStart, (last?.attempt ?? 0) + 1);
    if (attempt > next) {
      log.warn({ next }, 'callback: an attempt job ahead of the next attempt; skipped');
      return { outcome: 'skipped', reason: 'not_next' };
    }

    const text = await deliveryBody(config, context, startedAt);
    if (text === null) return { outcome: 'skipped', reason: 'task_gone' };
    // Encoded once: the bytes signed are the bytes sent.
    const body = Buffer.from(text, 'utf8');
    // The workspace's first delivery makes its secret.
    const secrets =
      context.signing ??
      (await callbackRepository.signingSecrets(db, box, task.workspaceId, newCallbackSecret, startedAt));
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      ...callbackSignatureHeaders(body, secrets, { taskId, deliveryId, webhookId: webhookIdFor(taskId, 'completed') }),
    };

    const result = await send(task.callbackUrl, body, headers, deps, ctx.signal);
    // Decided on the task as this attempt read it, and applied in the statement that records the attempt while the
    // task still is so; when a redelivery started a new round meanwhile, decided again on the task as it is now.
    const outcome: RecordedAttempt = {
      attempt,
      statusCode: result.statusCode,
      createdAt: startedAt,
      durationMs: result.durationMs,
    };
    const now = new Date();
    const planned = decideDelivery(task, outcome, config.callbacks.retryScheduleMs, {
      now: now.getTime(),
      endedAt: result.endedAt,
    });
    const {
      recorded,
      applied,
      task: current,
    } = await records.call({
      now,
      entry: {
        input: {
          workspaceId: task.workspaceId,
          taskId,
          attempt,
          deliveryId,
          url: task.callbackUrl,
          statusCode: result.statusCode,
          durationMs: result.durationMs,
          error: result.error,
          responseHead: result.responseHead,
          at: startedAt,
        },
        decidedOn: task,
        step: deliveryUpdate(planned, outcome),
      },
    });
    const fields = { statusCode: result.statusCode, durationMs: result.durationMs, error: result.error };
    if (!recorded) {
      log.info(fields, 'callback: attempt made, but a concurrent run recorded it first');
      return { outcome: 'raced', attempt };
    }
    // Logged before what follows is scheduled, so an attempt is logged even when that fails (and is retried).
    log.info(fields, 'callback: attempt');
    let then = planned;
    if (applied) await scheduleNext(deps, task, planned);
    else then = await applyAttempt(deps, current, outcome, { now, endedAt: result.endedAt });
    if (then.step === 'parked') log.warn({}, 'callback: parked after the last attempt of its round failed');
    return { outcome: 'attempted', attempt, statusCode: result.statusCode, error: result.error, then };
  };
}

interface SendResult {
  statusCode: number | null;
  /** Until the status line arrived or the request failed. */
  durationMs: number;
  /** Unix ms when that happened: the next attempt's delay counts from here. */
  endedAt: number;
  error: string | null;
  responseHead: string | null;
}

/**
 * One POST through the outbound client: the address is checked again now and the socket pinned to it, redirects
 * are not followed (a 3xx is a failure with its status), TLS is verified. Success is a 2xx status within the
 * timeout; the body is read only for its first bytes, so the receiver's body size never matters.
 */
async function send(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  deps: DispatcherDeps,
  signal: AbortSignal | undefined,
): Promise<SendResult> {
  const { timeoutMs } = deps.config.callbacks;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const ended = () => ({ durationMs: elapsed(), endedAt: Date.now() });
  let response: Awaited<ReturnType<typeof postChecked>>;
  try {
    response = await postChecked(url, body, {
      allowCidrs: deps.config.outbound.allowCidrs,
      ...deps.outbound,
      headers,
      timeoutMs,
      connectTimeoutMs: Math.min(5_000, timeoutMs),
      acceptStatus: () => true,
      // Only the body's first bytes are read (below), then it is dropped: a body of any size leaves a 2xx a 2xx.
      maxBytes: Number.POSITIVE_INFINITY,
      signal,
    });
  } catch (e) {
    // Shutdown aborted the request: the job goes back to the queue unrecorded and the attempt is made again.
    if (signal?.aborted || !isOutboundError(e)) throw e;
    return { statusCode: e.status ?? null, ...ended(), error: describe(e), responseHead: null };
  }
  const end = ended();
  const responseHead = headText(await readHead(response.body, RESPONSE_HEAD_BYTES));
  const error = isDeliveredStatus(response.status) ? null : `http_status: the receiver answered ${response.status}.`;
  return { statusCode: response.status, ...end, error, responseHead };
}

function describe(e: OutboundError): string {
  // A closed, filtered, reset or non-TLS port reads the same: the delivery log, which the workspace reads,
  // cannot be used to map ports through the gateway.
  if (UNREACHABLE.has(e.reason)) return `unreachable: ${e.rule}`;
  // The rule that refused the address, never the address: the host's records are not the workspace's to learn.
  if (e.reason === 'private_address') return `address_not_allowed: private_address (${e.range ?? 'not public'})`;
  const rule = ADDRESS_RULES.has(e.reason) ? 'address_not_allowed' : e.reason;
  return `${rule}: ${e.message}`.slice(0, 2000);
}

const UNREACHABLE: ReadonlySet<OutboundReason> = new Set(['tls', 'timeout', 'connection']);

/** The answer's first bytes as text, null when there were none. Postgres text cannot hold NUL, so those are dropped. */
function headText(head: Buffer): string | null {
  const text = head.toString('utf8').replace(/\u0000/g, '');
  return text === '' ? null : text;
}
