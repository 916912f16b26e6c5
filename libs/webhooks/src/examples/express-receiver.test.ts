// The README's receiver, over a real socket: verified before parsing, de-duplicated by SVC-Delivery-Id, 400 on a
// bad signature or re-serialised body; and its standalone start reads PORT and SVC_CALLBACK_SECRET.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { eventually, freePort } from '@gensvc/testing';
import { deliveryIdFor, newCallbackSecret, signatureHeader } from '../index';
import { CALLBACK_PATH, createReceiver, type TaskEnvelope } from './express-receiver';

const secret = newCallbackSecret();
const envelope: TaskEnvelope = {
  task_id: 'tsk_receiver1',
  status: 'completed',
  output: { url: 'https://files.example/o/tsk_receiver1.png' },
  cost: { amount: 0.04, currency: 'USD' },
  delivered_at: '2026-11-21T07:00:00Z',
};
const body = JSON.stringify(envelope);

let server: Server;
let url: string;
let handled: TaskEnvelope[];
let failNext: boolean;
beforeEach(async () => {
  handled = [];
  failNext = false;
  const app = createReceiver(secret, (task) => {
    if (failNext) {
      failNext = false;
      throw new Error('database unavailable');
    }
    handled.push(task);
  });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${CALLBACK_PATH}`;
});
afterEach(() => new Promise<void>((r) => server.close(() => r())));

function deliver(raw: string, headers: Record<string, string>, target = url): Promise<Response> {
  return fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });
}

const signed = (raw: string, attempt = 1, secrets = [secret]) => ({
  'SVC-Signature': signatureHeader(raw, secrets),
  'SVC-Task-Id': envelope.task_id,
  'SVC-Delivery-Id': deliveryIdFor(envelope.task_id, attempt),
});

it('handles a signed callback once and acknowledges a repeat of the same delivery without handling it', async () => {
  const headers = signed(body);
  const first = await deliver(body, headers);
  expect(first.status).toBe(200);
  expect(handled).toEqual([envelope]);

  const again = await deliver(body, headers);
  expect(again.status).toBe(200);
  expect(await again.json()).toEqual({ received: true, duplicate: true });
  expect(handled).toHaveLength(1);

  // The next attempt has its own delivery id: it is handled, which is why handlers are idempotent per task_id.
  expect((await deliver(body, signed(body, 2))).status).toBe(200);
  expect(handled).toHaveLength(2);
});

it('refuses a bad signature, a wrong secret and a stale timestamp with 400 and does not handle them', async () => {
  const headers = signed(body);
  const flipped = headers['SVC-Signature'].replace(/.$/, (c) => (c === '0' ? '1' : '0'));
  const cases: Array<[Record<string, string>, string]> = [
    [{ ...headers, 'SVC-Signature': flipped }, 'no_matching_signature'],
    [signed(body, 1, [newCallbackSecret()]), 'no_matching_signature'],
    [
      { ...headers, 'SVC-Signature': signatureHeader(body, [secret], Math.floor(Date.now() / 1000) - 301) },
      'timestamp_outside_tolerance',
    ],
    [{ 'SVC-Task-Id': envelope.task_id }, 'missing_header'],
    [{ ...headers, 'SVC-Signature': 'v1=abc' }, 'malformed_header'],
  ];
  for (const [h, reason] of cases) {
    const res = await deliver(body, h);
    expect([reason, res.status, await res.json()]).toEqual([reason, 400, { error: reason }]);
  }
  expect(handled).toEqual([]);
  // None of those claimed the delivery id: the genuine delivery is still handled.
  expect((await deliver(body, headers)).status).toBe(200);
  expect(handled).toEqual([envelope]);
});

it('refuses a body re-serialised after signing (same JSON, other whitespace)', async () => {
  const headers = signed(body);
  const reserialised = JSON.stringify(JSON.parse(body), null, 2);
  expect(JSON.parse(reserialised)).toEqual(JSON.parse(body));
  const res = await deliver(reserialised, headers);
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'no_matching_signature' });
  expect(handled).toEqual([]);
});

it('verifies with the old or new secret while rolling a rotation', async () => {
  const rotated = newCallbackSecret();
  expect((await deliver(body, signed(body, 1, [rotated, secret]))).status).toBe(200);
  expect(handled).toHaveLength(1);
});

it('answers 500 when the handler fails and handles the same delivery when it comes again', async () => {
  failNext = true;
  const headers = signed(body);
  const logged = jest.spyOn(console, 'error').mockImplementation(() => {});
  expect((await deliver(body, headers)).status).toBe(500);
  expect(logged).toHaveBeenCalledWith('callback handler failed', envelope.task_id, expect.any(Error));
  logged.mockRestore();
  expect(handled).toEqual([]);
  expect((await deliver(body, headers)).status).toBe(200);
  expect(handled).toEqual([envelope]);
});

it('refuses a body that is not JSON before verifying anything', async () => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain', ...signed(body) }, body });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'expected an application/json body' });
  expect(handled).toEqual([]);
});

it('refuses signed JSON that is not a task envelope, without handling it', async () => {
  const other = JSON.stringify({ hello: 1 });
  const res = await deliver(other, signed(other));
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'not a task envelope' });
  expect(handled).toEqual([]);
});

it('starts standalone on PORT with SVC_CALLBACK_SECRET', async () => {
  const port = await freePort();
  // The build (scripts/build.mjs) puts the compiled example beside the package's other outputs.
  const script = join(__dirname, '../../dist/examples/express-receiver.js');
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), SVC_CALLBACK_SECRET: secret },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((r) => child.once('exit', r));
  try {
    const target = `http://127.0.0.1:${port}${CALLBACK_PATH}`;
    await eventually(
      async () => (await deliver(body, signed(body), target).catch(() => null))?.status === 200,
      `the receiver on ${port}\n${output}`,
      10_000,
    );
    expect((await deliver(body, signed(body, 1, [newCallbackSecret()]), target)).status).toBe(400);
    await eventually(
      () => output.includes(`task ${envelope.task_id} completed ${envelope.output!.url}`),
      'the handled task in the output',
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
