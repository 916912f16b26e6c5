// The signed headers of a callback attempt, checked against the Standard Webhooks package and the spec's recipe.
import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { webhookIdFor } from './delivery-id';
import { CALLBACK_SECRET_PATTERN, newCallbackSecret } from './secret';
import { callbackSignatureHeaders, standardKey } from './standard-webhooks';

const body = Buffer.from(JSON.stringify({ object: 'task', task_id: 'tsk_1', status: 'completed' }));
const ids = { taskId: 'tsk_1', deliveryId: 'dlv_1', webhookId: webhookIdFor('tsk_1', 'completed') };

it('makes secrets every Standard Webhooks library decodes: padded standard base64 of 32 bytes', () => {
  for (let i = 0; i < 50; i++) {
    const secret = newCallbackSecret();
    expect(secret).toMatch(CALLBACK_SECRET_PATTERN);
    expect(standardKey(secret)).toHaveLength(32);
    expect(() => new Webhook(secret)).not.toThrow();
  }
});

it('reads a url-safe, unpadded secret as the same key bytes as its standard form', () => {
  const bytes = Buffer.from('fb'.repeat(32), 'hex');
  const urlSafe = `whsec_${bytes.toString('base64url')}`;
  expect(urlSafe).toMatch(/[-_]/);
  expect(standardKey(urlSafe)).toEqual(bytes);
  const headers = callbackSignatureHeaders(body, [urlSafe], { ...ids, timestamp: Math.floor(Date.now() / 1000) });
  expect(new Webhook(`whsec_${bytes.toString('base64')}`).verify(body, headers)).toEqual(JSON.parse(body.toString()));
});

it('signs the same timestamp in both schemes, once per secret, in the order given', () => {
  const [current, previous] = [newCallbackSecret(), newCallbackSecret()];
  const t = Math.floor(Date.now() / 1000);
  const headers = callbackSignatureHeaders(body, [current, previous], { ...ids, timestamp: t });
  const hex = (s: string) => createHmac('sha256', s).update(`${t}.`).update(body).digest('hex');
  expect(headers).toEqual({
    'SVC-Signature': `t=${t},v1=${hex(current)},v1=${hex(previous)}`,
    'SVC-Task-Id': 'tsk_1',
    'SVC-Delivery-Id': 'dlv_1',
    'webhook-id': ids.webhookId,
    'webhook-timestamp': String(t),
    'webhook-signature': expect.stringMatching(/^v1,\S{44} v1,\S{44}$/),
  });
  for (const secret of [current, previous]) expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
  expect(() => new Webhook(newCallbackSecret()).verify(body, headers)).toThrow('No matching signature found');
});

it('gives one webhook-id per task and event, unlike delivery ids', () => {
  const task = `tsk_${randomBytes(8).toString('hex')}`;
  expect(webhookIdFor(task, 'completed')).toBe(webhookIdFor(task, 'completed'));
  expect(webhookIdFor(task, 'completed')).not.toBe(webhookIdFor(`${task}x`, 'completed'));
  expect(() => webhookIdFor('', 'completed')).toThrow(TypeError);
});
