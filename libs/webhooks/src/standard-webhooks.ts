// Standard Webhooks signing (DESIGN.md §4): `webhook-signature` is a space-separated list of `v1,<base64>`, each an
// HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the bytes the base64 after `whsec_`
// encodes. The same `whsec_` secret keys SVC-Signature too, there as its whole text (signature.ts).
import { DELIVERY_ID_HEADER, SIGNATURE_HEADER, TASK_ID_HEADER } from './headers';
import { bodyBytes, checkedSecret, hmacSha256, signatureHeader, unixNow, type RawBody } from './signature';

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/**
 * The HMAC key of a `whsec_<base64>` secret. Node's decoder reads the url-safe alphabet and missing padding as
 * well, so a secret written either way gives the same 32 bytes.
 */
export function standardKey(secret: string): Buffer {
  const text = checkedSecret(secret);
  const key = Buffer.from(text.startsWith('whsec_') ? text.slice('whsec_'.length) : text, 'base64');
  if (key.length === 0) throw new TypeError('The webhook signing secret is empty.');
  return key;
}

export const standardMac = (secret: string, id: string, timestamp: number, body: RawBody): Buffer =>
  hmacSha256(standardKey(secret), `${id}.${timestamp}.`, bodyBytes(body));

/** The `v1,<base64>` signature of a Standard Webhooks message (what the sender puts in webhook-signature). */
export function standardWebhookSignature(secret: string, id: string, timestamp: number, body: RawBody): string {
  return `v1,${standardMac(secret, id, timestamp, body).toString('base64')}`;
}

export interface CallbackIds {
  taskId: string;
  /** SVC-Delivery-Id: one per attempt (deliveryIdFor). */
  deliveryId: string;
  /** webhook-id: one per event, the same on every attempt of it (webhookIdFor). */
  webhookId: string;
  /** Unix seconds of this attempt; both signatures sign it. */
  timestamp?: number;
}

/**
 * The signed headers of one callback attempt: the spec's three SVC-* headers and the three of Standard Webhooks,
 * each signature made once per secret in the order given ([current] or, during a rotation, [current, previous]).
 */
export function callbackSignatureHeaders(
  rawBody: RawBody,
  secrets: readonly string[],
  ids: CallbackIds,
): Record<string, string> {
  const timestamp = ids.timestamp ?? unixNow();
  const body = bodyBytes(rawBody);
  return {
    [SIGNATURE_HEADER]: signatureHeader(body, secrets, timestamp),
    [TASK_ID_HEADER]: ids.taskId,
    [DELIVERY_ID_HEADER]: ids.deliveryId,
    [WEBHOOK_ID_HEADER]: ids.webhookId,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestamp),
    [WEBHOOK_SIGNATURE_HEADER]: secrets
      .map((s) => standardWebhookSignature(s, ids.webhookId, timestamp, body))
      .join(' '),
  };
}
