import { createHash, createHmac } from 'node:crypto';
import {
  CALLBACK_SECRET_PATTERN,
  DEFAULT_TOLERANCE_SECONDS,
  deliveryIdFor,
  isWebhookVerificationError,
  newCallbackSecret,
  signatureHeader,
  verifyCallback,
  type CallbackHeaders,
  type VerifyOptions,
  type WebhookVerificationReason,
} from './index';

const T = 1_700_000_000;
const body =
  '{"task_id":"tsk_1","status":"completed","output":{"url":"https://files.example/o/1.png"},"note":"crème ☕"}';
const secret = newCallbackSecret();

function headersFor(signature: string): Record<string, string> {
  return { 'svc-signature': signature, 'svc-task-id': 'tsk_1', 'svc-delivery-id': deliveryIdFor('tsk_1', 1) };
}

/** The refusal's reason, or undefined when verification passed. */
function refusal(
  rawBody: string | Buffer,
  headers: CallbackHeaders,
  secrets: string | readonly string[],
  opts: VerifyOptions = { now: T },
): WebhookVerificationReason | undefined {
  try {
    verifyCallback(rawBody, headers, secrets, opts);
    return undefined;
  } catch (e) {
    if (isWebhookVerificationError(e)) return e.reason;
    throw e;
  }
}

describe('callback secrets', () => {
  it('are whsec_ and 32 random bytes in base64url', () => {
    const s = newCallbackSecret();
    expect(s).toMatch(CALLBACK_SECRET_PATTERN);
    expect(Buffer.from(s.slice('whsec_'.length), 'base64url')).toHaveLength(32);
    expect(newCallbackSecret()).not.toBe(s);
  });
});

describe('delivery ids', () => {
  it('are deterministic per (task, attempt) and distinct across attempts and tasks', () => {
    const id = deliveryIdFor('tsk_abc', 1);
    expect(id).toMatch(/^dlv_[A-Za-z0-9_-]{22}$/);
    expect(id).toBe(`dlv_${createHash('sha256').update('tsk_abc:1').digest().subarray(0, 16).toString('base64url')}`);
    expect(deliveryIdFor('tsk_abc', 1)).toBe(id);
    const others = [deliveryIdFor('tsk_abc', 2), deliveryIdFor('tsk_abd', 1), deliveryIdFor('tsk_ab', 11)];
    expect(new Set([id, ...others]).size).toBe(4);
  });

  it('refuses attempts that are not counted from 1 and empty task ids', () => {
    for (const attempt of [0, -1, 1.5, Number.NaN]) expect(() => deliveryIdFor('tsk_1', attempt)).toThrow(TypeError);
    expect(() => deliveryIdFor('', 1)).toThrow(TypeError);
  });
});

describe('signing', () => {
  it('matches an independent HMAC-SHA256 over "<t>.<body>" keyed with the whole secret', () => {
    const expected = createHmac('sha256', secret).update(`${T}.${body}`).digest('hex');
    expect(signatureHeader(body, [secret], T)).toBe(`t=${T},v1=${expected}`);
  });

  it('matches a fixed vector, for receivers written in other languages', () => {
    const fixed = `whsec_${'A'.repeat(43)}`;
    expect(signatureHeader('{"task_id":"tsk_1","status":"completed"}', [fixed], 1_700_000_000)).toBe(
      't=1700000000,v1=779924252ecfa0bdafbdb1e700951ba97cba5f806602b15414a1900dcdc10a3a',
    );
  });

  it('writes one v1 per secret, in order', () => {
    const other = newCallbackSecret();
    const h = signatureHeader(body, [secret, other], T);
    const v1Of = (s: string) => signatureHeader(body, [s], T).split('v1=')[1];
    expect(h).toBe(`t=${T},v1=${v1Of(secret)},v1=${v1Of(other)}`);
  });

  it('signs now by default', () => {
    const before = Math.floor(Date.now() / 1000);
    const t = Number(/^t=(\d+),/.exec(signatureHeader(body, [secret]))![1]);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it('refuses no secrets, an empty secret and a timestamp that is not whole seconds', () => {
    expect(() => signatureHeader(body, [], T)).toThrow(TypeError);
    expect(() => signatureHeader(body, [''], T)).toThrow(TypeError);
    expect(() => signatureHeader(body, [secret], 1.5)).toThrow(TypeError);
    expect(() => signatureHeader(body, [secret], -1)).toThrow(TypeError);
  });
});

describe('verifying', () => {
  it('round-trips and returns the timestamp, task id and delivery id', () => {
    const verified = verifyCallback(body, headersFor(signatureHeader(body, [secret], T)), secret, { now: T });
    expect(verified).toEqual({ timestamp: T, taskId: 'tsk_1', deliveryId: deliveryIdFor('tsk_1', 1) });
  });

  it('accepts a match on any of several v1 values and under any of several secrets', () => {
    const other = newCallbackSecret();
    const real = signatureHeader(body, [secret], T).split(',')[1];
    const junk = `v1=${'ab'.repeat(32)}`;
    expect(refusal(body, headersFor(`t=${T},${junk},${real}`), secret)).toBeUndefined();
    expect(refusal(body, headersFor(`t=${T},${real},${junk}`), secret)).toBeUndefined();
    expect(refusal(body, headersFor(signatureHeader(body, [other, secret], T)), secret)).toBeUndefined();
    expect(refusal(body, headersFor(signatureHeader(body, [secret], T)), [other, secret])).toBeUndefined();
    expect(refusal(body, headersFor(`t=${T},${junk}`), [other, secret])).toBe('no_matching_signature');
  });

  it('keeps old and new receivers verifying through the rotation overlap, and only new ones after it', () => {
    const previous = secret;
    const current = newCallbackSecret();
    const during = headersFor(signatureHeader(body, [current, previous], T));
    expect(refusal(body, during, previous)).toBeUndefined();
    expect(refusal(body, during, current)).toBeUndefined();
    expect(refusal(body, during, [current, previous])).toBeUndefined();
    const after = headersFor(signatureHeader(body, [current], T));
    expect(refusal(body, after, current)).toBeUndefined();
    expect(refusal(body, after, previous)).toBe('no_matching_signature');
  });

  it('refuses a tampered body, a tampered or truncated signature and a wrong secret', () => {
    const signature = signatureHeader(body, [secret], T);
    expect(refusal(body.replace('completed', 'Completed'), headersFor(signature), secret)).toBe(
      'no_matching_signature',
    );
    expect(refusal(`${body} `, headersFor(signature), secret)).toBe('no_matching_signature');
    const last = signature.at(-1)!;
    expect(refusal(body, headersFor(signature.slice(0, -1) + (last === '0' ? '1' : '0')), secret)).toBe(
      'no_matching_signature',
    );
    expect(refusal(body, headersFor(signature.slice(0, -2)), secret)).toBe('no_matching_signature');
    expect(refusal(body, headersFor(`${signature}00`), secret)).toBe('no_matching_signature');
    expect(refusal(body, headersFor(signature.replace(`t=${T}`, `t=${T + 1}`)), secret, { now: T })).toBe(
      'no_matching_signature',
    );
    expect(refusal(body, headersFor(signature), newCallbackSecret())).toBe('no_matching_signature');
    expect(refusal(body, headersFor(signature), secret.slice(0, -1))).toBe('no_matching_signature');
  });

  it('accepts timestamps within the tolerance either way and refuses stale and future ones', () => {
    const h = headersFor(signatureHeader(body, [secret], T));
    expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
    expect(refusal(body, h, secret, { now: T + 300 })).toBeUndefined();
    expect(refusal(body, h, secret, { now: T - 300 })).toBeUndefined();
    expect(refusal(body, h, secret, { now: T + 301 })).toBe('timestamp_outside_tolerance');
    expect(refusal(body, h, secret, { now: T - 301 })).toBe('timestamp_outside_tolerance');
    expect(refusal(body, h, secret, { now: T + 60, toleranceSeconds: 30 })).toBe('timestamp_outside_tolerance');
    expect(refusal(body, h, secret, { now: T + 30, toleranceSeconds: 30 })).toBeUndefined();
    expect(() => verifyCallback(body, h, secret, { now: T + 3600 })).toThrow(/signed 3600 s ago; tolerance is 300 s/);
    // A wrong secret is reported as such even when the timestamp is also stale.
    expect(refusal(body, h, newCallbackSecret(), { now: T + 3600 })).toBe('no_matching_signature');
  });

  it('judges the timestamp against the clock by default', () => {
    const fresh = headersFor(signatureHeader(body, [secret]));
    expect(verifyCallback(body, fresh, secret).timestamp).toBeGreaterThan(T);
    expect(refusal(body, headersFor(signatureHeader(body, [secret], T)), secret, {})).toBe(
      'timestamp_outside_tolerance',
    );
  });

  it('refuses a missing header and reads malformed ones strictly', () => {
    const v1 = signatureHeader(body, [secret], T).split(',')[1]!;
    expect(refusal(body, {}, secret)).toBe('missing_header');
    expect(refusal(body, { 'svc-signature': '' }, secret)).toBe('missing_header');
    expect(refusal(body, new Headers(), secret)).toBe('missing_header');
    const malformed = [
      v1, // no t
      `t=abc,${v1}`,
      `t=,${v1}`,
      `t=-5,${v1}`,
      `t=1.7e9,${v1}`,
      `t=0${T},${v1}`,
      `t=${T}`, // no v1
      `t=${T},v0=${'ab'.repeat(32)}`, // only an unknown scheme
      `t=${T},v1=abc`, // odd hex
      `t=${T},v1=${'zz'.repeat(32)}`,
      `t=${T},v1=`,
      `t=${T},t=${T},${v1}`,
      `t=${T}, ${v1}`,
      `t=${T},${v1},`,
      `t=${T};${v1}`,
      `T=${T},${v1}`,
      'garbage',
    ];
    for (const header of malformed)
      expect([header, refusal(body, headersFor(header), secret)]).toEqual([header, 'malformed_header']);
  });

  it('skips schemes other than v1', () => {
    const v1 = signatureHeader(body, [secret], T).split(',')[1]!;
    expect(refusal(body, headersFor(`t=${T},v0=${'ab'.repeat(32)},${v1},v2=c29tZXRoaW5n==`), secret)).toBeUndefined();
  });

  it('treats a string body and its UTF-8 bytes alike', () => {
    const fromString = signatureHeader(body, [secret], T);
    const bytes = Buffer.from(body, 'utf8');
    expect(signatureHeader(bytes, [secret], T)).toBe(fromString);
    expect(signatureHeader(new Uint8Array(bytes), [secret], T)).toBe(fromString);
    expect(refusal(bytes, headersFor(fromString), secret)).toBeUndefined();
    expect(refusal(body, headersFor(signatureHeader(bytes, [secret], T)), secret)).toBeUndefined();
    expect(refusal(Buffer.from(body, 'latin1'), headersFor(fromString), secret)).toBe('no_matching_signature');
  });

  it('finds the headers by any casing in a plain object and in fetch Headers', () => {
    const signature = signatureHeader(body, [secret], T);
    const id = deliveryIdFor('tsk_1', 3);
    const expected = { timestamp: T, taskId: 'tsk_1', deliveryId: id };
    const objects: CallbackHeaders[] = [
      { 'svc-signature': signature, 'svc-task-id': 'tsk_1', 'svc-delivery-id': id },
      { 'SVC-Signature': signature, 'SVC-Task-Id': 'tsk_1', 'SVC-Delivery-Id': id },
      { 'Svc-SIGNATURE': signature, 'svc-TASK-id': 'tsk_1', 'sVc-delivery-ID': id, 'content-type': 'application/json' },
      new Headers({ 'SVC-Signature': signature, 'svc-task-id': 'tsk_1', 'Svc-Delivery-Id': id }),
    ];
    for (const headers of objects) expect(verifyCallback(body, headers, secret, { now: T })).toEqual(expected);
    expect(verifyCallback(body, { 'svc-signature': [signature] }, secret, { now: T })).toEqual({
      timestamp: T,
      taskId: undefined,
      deliveryId: undefined,
    });
  });

  it('refuses a repeated signature header rather than picking one', () => {
    const signature = signatureHeader(body, [secret], T);
    expect(refusal(body, { 'svc-signature': [signature, signature] }, secret)).toBe('malformed_header');
    expect(refusal(body, { 'svc-signature': signature, 'SVC-Signature': signature }, secret)).toBe('malformed_header');
    const repeated = new Headers();
    repeated.append('svc-signature', signature);
    repeated.append('svc-signature', signature);
    expect(refusal(body, repeated, secret)).toBe('malformed_header');
  });

  it('throws TypeError on misuse: a parsed body, no secrets, an empty secret, a negative tolerance', () => {
    const h = headersFor(signatureHeader(body, [secret], T));
    expect(() => verifyCallback(JSON.parse(body) as string, h, secret, { now: T })).toThrow(/raw request body/);
    expect(() => verifyCallback(body, h, [], { now: T })).toThrow(TypeError);
    expect(() => verifyCallback(body, h, '', { now: T })).toThrow(TypeError);
    expect(() => verifyCallback(body, h, [secret, undefined as unknown as string], { now: T })).toThrow(TypeError);
    expect(() => verifyCallback(body, h, secret, { now: T, toleranceSeconds: -1 })).toThrow(TypeError);
  });

  it('names the error and its reason for logs', () => {
    try {
      verifyCallback(body, {}, secret);
      throw new Error('not refused');
    } catch (e) {
      expect(e).toMatchObject({
        name: 'WebhookVerificationError',
        reason: 'missing_header',
        message: 'no SVC-Signature header',
      });
      expect(e).toBeInstanceOf(Error);
    }
  });
});
