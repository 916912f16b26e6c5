// Verifies the webhooks generation providers send when a job ends, each as its provider documents it.
//
//  - Replicate signs with Standard Webhooks: headers `webhook-id`, `webhook-timestamp` (Unix seconds) and
//    `webhook-signature`, a space-separated list of `v1,<base64>`; each signature is HMAC-SHA256 over
//    `${id}.${timestamp}.${body}` keyed with the base64 bytes after the `whsec_` prefix of the account's secret.
//  - fal signs with ED25519: headers `x-fal-webhook-request-id`, `x-fal-webhook-user-id`, `x-fal-webhook-timestamp`
//    (Unix seconds) and `x-fal-webhook-signature` (hex); the message is the request id, the user id, the timestamp
//    and the hex SHA-256 of the body, joined by newlines; any Ed25519 key of the JWKS fal publishes may verify it.
//
// Both refuse a timestamp more than `toleranceSeconds` (default 5 minutes) from now, so a captured webhook cannot
// be replayed later. The body must be the raw bytes received: re-serialised JSON would not verify.
import { createHash, createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { standardMac } from './standard-webhooks';
import {
  anyMacMatches,
  headerValue,
  outsideTolerance,
  type CallbackHeaders,
  type VerifyOptions,
} from './signature-checks';

export type ProviderWebhookFailure = 'missing_header' | 'stale' | 'bad_signature' | 'other_account';

export class ProviderWebhookError extends Error {
  constructor(
    readonly reason: ProviderWebhookFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ProviderWebhookError';
  }
}

/** `now` (Unix seconds, default now) and `toleranceSeconds` (default 300), as for verifyCallback. */
export type ProviderWebhookOptions = VerifyOptions;

function header(headers: CallbackHeaders, name: string): string {
  const text = headerValue(headers, name);
  if (text === undefined) throw new ProviderWebhookError('missing_header', `The ${name} header is missing.`);
  return text;
}

function checkTimestamp(text: string, opts: ProviderWebhookOptions): number {
  const timestamp = Number(text);
  if (!/^\d{1,12}$/.test(text) || outsideTolerance(timestamp, opts) !== null) {
    throw new ProviderWebhookError('stale', 'The webhook timestamp is missing or too far from now.');
  }
  return timestamp;
}

/** Verifies a Replicate (Standard Webhooks) webhook; returns its id and timestamp, or throws ProviderWebhookError. */
export function verifyReplicateWebhook(
  body: Buffer,
  headers: CallbackHeaders,
  secret: string,
  opts: ProviderWebhookOptions = {},
): { id: string; timestamp: number } {
  const id = header(headers, 'webhook-id');
  const timestamp = checkTimestamp(header(headers, 'webhook-timestamp'), opts);
  const offered = header(headers, 'webhook-signature')
    .split(' ')
    .map((entry) => entry.split(',', 2))
    .filter(([version, sig]) => version === 'v1' && sig)
    .map(([, sig]) => Buffer.from(sig!, 'base64'));
  if (anyMacMatches([standardMac(secret, id, timestamp, body)], offered)) return { id, timestamp };
  throw new ProviderWebhookError('bad_signature', 'No webhook-signature matches the body.');
}

/** The message fal signs for a webhook. */
export function falWebhookMessage(
  requestId: string,
  userId: string,
  timestamp: number | string,
  body: Buffer | string,
): Buffer {
  return Buffer.from(
    [requestId, userId, String(timestamp), createHash('sha256').update(body).digest('hex')].join('\n'),
    'utf8',
  );
}

/** fal's published keys (a JWKS's `keys`) as Ed25519 public keys; other key types are left out. */
export function ed25519Keys(jwks: { keys?: JsonWebKey[] }): KeyObject[] {
  return (jwks.keys ?? [])
    .filter((k) => k.kty === 'OKP' && k.crv === 'Ed25519' && typeof k.x === 'string')
    .map((k) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
}

/**
 * Verifies a fal webhook against fal's keys and that it is for `userId`, the receiving fal account (fal signs every
 * account's webhooks with the same keys, so a signature alone proves fal sent it, not that it is this account's:
 * the signed x-fal-webhook-user-id says whose it is); returns its request id, user id and timestamp, or throws.
 */
export function verifyFalWebhook(
  body: Buffer,
  headers: CallbackHeaders,
  keys: readonly KeyObject[],
  opts: ProviderWebhookOptions & { userId: string },
): { requestId: string; userId: string; timestamp: number } {
  const requestId = header(headers, 'x-fal-webhook-request-id');
  const userId = header(headers, 'x-fal-webhook-user-id');
  const timestampText = header(headers, 'x-fal-webhook-timestamp');
  const timestamp = checkTimestamp(timestampText, opts);
  const signatureHex = header(headers, 'x-fal-webhook-signature');
  const signature = /^[0-9a-f]{128}$/i.test(signatureHex) ? Buffer.from(signatureHex, 'hex') : null;
  if (signature) {
    const message = falWebhookMessage(requestId, userId, timestampText, body);
    if (keys.some((key) => verify(null, message, key, signature))) {
      if (userId !== opts.userId)
        throw new ProviderWebhookError(
          'other_account',
          'The webhook is signed for another fal account (x-fal-webhook-user-id).',
        );
      return { requestId, userId, timestamp };
    }
  }
  throw new ProviderWebhookError(
    'bad_signature',
    "The x-fal-webhook-signature does not verify against any of fal's keys.",
  );
}
