// Provider webhook signatures as Replicate (Standard Webhooks) and fal (ED25519 + JWKS) document them.
import { generateKeyPairSync, sign, type JsonWebKey } from 'node:crypto';
import {
  ProviderWebhookError,
  ed25519Keys,
  falWebhookMessage,
  verifyFalWebhook,
  verifyReplicateWebhook,
} from './provider-webhooks';
import { standardWebhookSignature } from './standard-webhooks';

const reasonOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof ProviderWebhookError) return e.reason;
    throw e;
  }
  return 'verified';
};

describe('Replicate (Standard Webhooks)', () => {
  // The test vector of the Standard Webhooks specification's reference libraries.
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const timestamp = 1614265330;
  const body = Buffer.from('{"test": 2432232314}');
  const headers = (signature: string, ts = String(timestamp)) => ({
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': signature,
  });

  it("signs as the specification's test vector says", () => {
    expect(standardWebhookSignature(secret, id, timestamp, body)).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  it('verifies a good signature, also among others (key rotation), within the tolerance', () => {
    const good = standardWebhookSignature(secret, id, timestamp, body);
    expect(verifyReplicateWebhook(body, headers(good), secret, { now: timestamp + 10 })).toEqual({ id, timestamp });
    expect(verifyReplicateWebhook(body, headers(`v1,AAAA v2,xyz ${good}`), secret, { now: timestamp - 10 })).toEqual({
      id,
      timestamp,
    });
  });

  it.each([
    [
      'a changed body',
      () =>
        verifyReplicateWebhook(
          Buffer.from('{"test": 2432232315}'),
          headers(standardWebhookSignature(secret, id, timestamp, body)),
          secret,
          { now: timestamp },
        ),
      'bad_signature',
    ],
    [
      'another secret',
      () =>
        verifyReplicateWebhook(
          body,
          headers(standardWebhookSignature(`whsec_${Buffer.from('other').toString('base64')}`, id, timestamp, body)),
          secret,
          { now: timestamp },
        ),
      'bad_signature',
    ],
    [
      'a signature of another id',
      () =>
        verifyReplicateWebhook(body, headers(standardWebhookSignature(secret, 'msg_other', timestamp, body)), secret, {
          now: timestamp,
        }),
      'bad_signature',
    ],
    [
      'a timestamp six minutes old',
      () =>
        verifyReplicateWebhook(body, headers(standardWebhookSignature(secret, id, timestamp, body)), secret, {
          now: timestamp + 360,
        }),
      'stale',
    ],
    [
      'a timestamp that is not a number',
      () => verifyReplicateWebhook(body, headers('v1,x', '1614265330.5'), secret, { now: timestamp }),
      'stale',
    ],
    [
      'no signature header',
      () =>
        verifyReplicateWebhook(body, { 'webhook-id': id, 'webhook-timestamp': String(timestamp) }, secret, {
          now: timestamp,
        }),
      'missing_header',
    ],
  ])('refuses %s', (_what, attempt, reason) => {
    expect(reasonOf(attempt)).toBe(reason);
  });
});

describe('fal (ED25519, keys from a JWKS)', () => {
  const pair = () => generateKeyPairSync('ed25519');
  const signer = pair();
  const other = pair();
  const jwks = {
    keys: [
      other.publicKey.export({ format: 'jwk' }) as JsonWebKey,
      signer.publicKey.export({ format: 'jwk' }) as JsonWebKey,
    ],
  };
  const body = Buffer.from(JSON.stringify({ request_id: 'req-1', status: 'OK', payload: { images: [] } }));
  const now = 1_764_000_000;
  const headersFor = (b: Buffer, key = signer.privateKey, ts = now, userId = 'user-9') => ({
    'x-fal-webhook-request-id': 'req-1',
    'x-fal-webhook-user-id': userId,
    'x-fal-webhook-timestamp': String(ts),
    'x-fal-webhook-signature': sign(null, falWebhookMessage('req-1', userId, ts, b), key).toString('hex'),
  });

  it('reads the Ed25519 keys of a JWKS, leaving others out', () => {
    expect(ed25519Keys({ keys: [...jwks.keys, { kty: 'RSA', n: 'x', e: 'AQAB' }] })).toHaveLength(2);
  });

  it('verifies a signature by any published key', () => {
    expect(verifyFalWebhook(body, headersFor(body), ed25519Keys(jwks), { now, userId: 'user-9' })).toEqual({
      requestId: 'req-1',
      userId: 'user-9',
      timestamp: now,
    });
  });

  it.each([
    [
      'a changed body',
      () => verifyFalWebhook(Buffer.from('{}'), headersFor(body), ed25519Keys(jwks), { now, userId: 'user-9' }),
      'bad_signature',
    ],
    [
      'a key fal does not publish',
      () => verifyFalWebhook(body, headersFor(body, pair().privateKey), ed25519Keys(jwks), { now, userId: 'user-9' }),
      'bad_signature',
    ],
    [
      'another request id than the one signed',
      () =>
        verifyFalWebhook(body, { ...headersFor(body), 'x-fal-webhook-request-id': 'req-2' }, ed25519Keys(jwks), {
          now,
          userId: 'user-9',
        }),
      'bad_signature',
    ],
    [
      'a signature that is not hex',
      () =>
        verifyFalWebhook(body, { ...headersFor(body), 'x-fal-webhook-signature': 'zz' }, ed25519Keys(jwks), {
          now,
          userId: 'user-9',
        }),
      'bad_signature',
    ],
    [
      'a timestamp ten minutes ahead',
      () =>
        verifyFalWebhook(body, headersFor(body, signer.privateKey, now + 600), ed25519Keys(jwks), {
          now,
          userId: 'user-9',
        }),
      'stale',
    ],
    [
      'another user id than the one signed',
      () =>
        verifyFalWebhook(body, { ...headersFor(body), 'x-fal-webhook-user-id': 'user-8' }, ed25519Keys(jwks), {
          now,
          userId: 'user-8',
        }),
      'bad_signature',
    ],
    [
      'a webhook fal signed for another account',
      () =>
        verifyFalWebhook(body, headersFor(body, signer.privateKey, now, 'user-8'), ed25519Keys(jwks), {
          now,
          userId: 'user-9',
        }),
      'other_account',
    ],
    [
      'no user id',
      () =>
        verifyFalWebhook(body, { ...headersFor(body), 'x-fal-webhook-user-id': undefined }, ed25519Keys(jwks), {
          now,
          userId: 'user-9',
        }),
      'missing_header',
    ],
  ])('refuses %s', (_what, attempt, reason) => {
    expect(reasonOf(attempt)).toBe(reason);
  });
});
