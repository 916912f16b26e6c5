import { createHash } from 'node:crypto';

export const DELIVERY_ID_PREFIX = 'dlv_';

/**
 * The SVC-Delivery-Id of one attempt: `dlv_` and base64url of the first 16 bytes of sha256(`<taskId>:<attempt>`).
 *
 * Deterministic rather than random so that a dispatcher that dies after sending but before recording the attempt
 * re-sends that attempt under the same id, and the receiver's de-duplication by id still holds (DESIGN.md §4).
 * Distinct attempts of one task get distinct ids; 128 bits keep ids of different tasks from colliding.
 */
export function deliveryIdFor(taskId: string, attempt: number): string {
  if (taskId === '') throw new TypeError('deliveryIdFor: taskId is empty');
  if (!Number.isSafeInteger(attempt) || attempt < 1)
    throw new TypeError(`deliveryIdFor: attempt must be an integer >= 1, got ${attempt}`);
  return (
    DELIVERY_ID_PREFIX +
    createHash('sha256').update(`${taskId}:${attempt}`).digest().subarray(0, 16).toString('base64url')
  );
}

export const WEBHOOK_ID_PREFIX = 'msg_';

/** The events a task's callback carries; the completion is the only one now. */
export type CallbackEvent = 'completed';

/**
 * The webhook-id of one event of a task: `msg_` and base64url of the first 16 bytes of sha256(`<taskId>:<event>`),
 * the same on every attempt of the event so that receivers de-duplicate across retries (Standard Webhooks).
 */
export function webhookIdFor(taskId: string, event: CallbackEvent): string {
  if (taskId === '') throw new TypeError('webhookIdFor: taskId is empty');
  // A redelivery round re-sends the same event (as Svix's resend does), so the id spans rounds, not one round.
  return (
    WEBHOOK_ID_PREFIX + createHash('sha256').update(`${taskId}:${event}`).digest().subarray(0, 16).toString('base64url')
  );
}
