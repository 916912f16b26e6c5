// Recovery of parked deliveries and the test callback, over a real socket against real Postgres and Redis; the test
// callback reaches a real HTTPS receiver on 127.0.0.1 (let through by OUTBOUND_ALLOW_CIDRS, its certificate from
// the test CA handed to the edge), where the official standardwebhooks package and the spec's recipe verify it.
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import { CallbackDeliver } from '@gensvc/contracts';
import { callbackRepository, newId, taskRepository } from '@gensvc/db';
import { jobIdFor } from '@gensvc/queue';
import { jsonOf, makeCustomer, makeKey, makeMember, makeTask, startTlsServer, useTestContext } from '@gensvc/testing';
import type { TlsTestServer } from '@gensvc/testing';
import { deliveryIdFor, newCallbackSecret, verifyCallback, webhookIdFor } from '@gensvc/webhooks';
import { Webhook } from 'standardwebhooks';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer } from '../files/files-test-support';
import { errorOf } from '../tasks/tasks-test-support';
import { RECOVER_LIMIT } from './schema';
import { TEST_CALLBACKS_PER_MINUTE } from './test-callback';

const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' });
let edge: EdgeUnderTest;
let receiver: TlsTestServer;
const arrivals: { path: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];

beforeAll(async () => {
  receiver = await startTlsServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      arrivals.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
      if (path.startsWith('/busy')) {
        res.statusCode = 503;
        res.end('try later');
      } else {
        res.statusCode = 201;
        res.end(`${'accepted '.repeat(300)}`);
      }
    });
  });
  edge = await startEdge(ctx, { outbound: { ca: receiver.caPem } });
});
afterAll(async () => {
  await edge?.close();
  await receiver?.close();
});

type Customer = Awaited<ReturnType<typeof makeCustomer>>;
const post = (path: string, secret: string | undefined, body: unknown, raw?: string) =>
  fetch(`${edge.url}${path}`, {
    method: 'POST',
    headers: { ...(secret ? bearer(secret) : {}), 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });
const recover = (c: { secret: string }, since: unknown) => post('/api/v1/callbacks/recover', c.secret, { since });
const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000);

/** A finished task whose delivery was parked at `parkedAt`, with `attempts` attempts recorded before. */
async function parkedTask(
  c: Customer,
  parkedAt: Date,
  attempts = 0,
  state: 'parked' | 'pending' | 'delivered' = 'parked',
) {
  const task = await makeTask(ctx.db, { workspaceId: c.ws.id, apiKeyId: c.key.id, callbackUrl: `${receiver.url}/h` });
  for (let attempt = 1; attempt <= attempts; attempt++) {
    await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: {
        workspaceId: c.ws.id,
        taskId: task.id,
        attempt,
        deliveryId: deliveryIdFor(task.id, attempt),
        url: `${receiver.url}/h`,
        statusCode: 503,
        durationMs: 5,
        error: 'http_status: the receiver answered 503.',
        responseHead: null,
        at: parkedAt,
      },
      decidedOn: { callbackRoundStart: 1 },
      step: null,
    });
  }
  await ctx.db.task.update({
    where: { id: task.id },
    data: { status: 'completed', completedAt: parkedAt, callbackState: state, updatedAt: parkedAt },
  });
  return task.id;
}

const stateOf = async (id: string) => {
  const t = await ctx.db.task.findUniqueOrThrow({ where: { id } });
  return { state: t.callbackState, round: t.callbackRoundStart };
};
const jobOf = (taskId: string, attempt: number) =>
  edge.deps.queues.get('callbacks').getJob(jobIdFor(CallbackDeliver, [taskId, attempt]));

describe('POST /api/v1/callbacks/recover', () => {
  it("starts one round for each of the workspace's deliveries parked since then, and none twice", async () => {
    const c = await makeCustomer(ctx.db);
    const other = await makeCustomer(ctx.db);
    const early = await parkedTask(c, hoursAgo(2), 5);
    const late = await parkedTask(c, hoursAgo(0.5));
    const old = await parkedTask(c, hoursAgo(72), 5);
    const pending = await parkedTask(c, hoursAgo(1), 2, 'pending');
    const delivered = await parkedTask(c, hoursAgo(1), 1, 'delivered');
    const elsewhere = await parkedTask(other, hoursAgo(1), 5);

    const since = hoursAgo(24).toISOString();
    const res = await recover(c, since);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ object: 'callback_recovery', since, recovered: 2, has_more: false });
    // Each round starts after the last attempt ever made, and its first attempt's job is queued to run now.
    expect(await stateOf(early)).toEqual({ state: 'pending', round: 6 });
    expect(await stateOf(late)).toEqual({ state: 'pending', round: 1 });
    for (const [id, attempt] of [
      [early, 6],
      [late, 1],
    ] as const) {
      const job = await jobOf(id, attempt);
      expect(job?.data).toMatchObject({ taskId: id, workspaceId: c.ws.id, attempt });
      expect(job?.opts.delay ?? 0).toBe(0);
    }
    // Parked before `since`, not parked, or another workspace's: as they were.
    expect(await stateOf(old)).toEqual({ state: 'parked', round: 1 });
    expect(await stateOf(pending)).toEqual({ state: 'pending', round: 1 });
    expect(await stateOf(delivered)).toEqual({ state: 'delivered', round: 1 });
    expect(await stateOf(elsewhere)).toEqual({ state: 'parked', round: 1 });
    expect(await jobOf(pending, 3)).toBeUndefined();

    // Again: nothing parked since then is left, so no second round.
    expect(await jsonOf(await recover(c, since))).toMatchObject({ recovered: 0, has_more: false });
    expect(await stateOf(early)).toEqual({ state: 'pending', round: 6 });
    expect(await jobOf(early, 7)).toBeUndefined();
  });

  it('gives each task one round when recoveries race', async () => {
    const c = await makeCustomer(ctx.db);
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => parkedTask(c, hoursAgo(1 + i / 100), 3)));
    const since = hoursAgo(24).toISOString();
    const answers = await Promise.all(Array.from({ length: 4 }, () => recover(c, since).then(jsonOf)));
    expect(answers.reduce((n, a) => n + a.recovered, 0)).toBe(12);
    for (const id of ids) expect(await stateOf(id)).toEqual({ state: 'pending', round: 4 });
  });

  it(`restarts at most ${RECOVER_LIMIT} a call, oldest first, and says when more remain`, async () => {
    const c = await makeCustomer(ctx.db);
    const t0 = hoursAgo(5).getTime();
    const data = Array.from({ length: RECOVER_LIMIT + 3 }, (_, i) => ({
      id: newId('tsk'),
      workspaceId: c.ws.id,
      model: 'sim/image-1',
      operation: 'text-to-image',
      input: {},
      status: 'completed' as const,
      callbackUrl: `${receiver.url}/h`,
      callbackState: 'parked' as const,
      updatedAt: new Date(t0 + i * 1_000),
    }));
    await ctx.db.task.createMany({ data });
    const first = await jsonOf(await recover(c, hoursAgo(6).toISOString()));
    expect(first).toMatchObject({ recovered: RECOVER_LIMIT, has_more: true });
    // The three parked last are the ones left.
    const left = await ctx.db.task.findMany({ where: { workspaceId: c.ws.id, callbackState: 'parked' } });
    expect(left.map((t) => t.id).sort()).toEqual(
      data
        .slice(-3)
        .map((t) => t.id)
        .sort(),
    );
    expect(await jsonOf(await recover(c, hoursAgo(6).toISOString()))).toMatchObject({ recovered: 3, has_more: false });
  });

  it('refuses bad input in the error shape, changing nothing', async () => {
    const c = await makeCustomer(ctx.db);
    const id = await parkedTask(c, hoursAgo(1));
    const refused = async (res: Response, status: number, code: string, param?: string) => {
      const error = await errorOf(res, status, code);
      if (param) expect(error.param).toBe(param);
      return error;
    };
    await refused(await post('/api/v1/callbacks/recover', c.secret, {}), 400, 'invalid_request', 'since');
    await refused(await recover(c, 'yesterday'), 400, 'invalid_request', 'since');
    await refused(await recover(c, 1_700_000_000), 400, 'invalid_request', 'since');
    await refused(await recover(c, '2026-02-31T00:00:00Z'), 400, 'invalid_request', 'since');
    const ahead = await refused(
      await recover(c, new Date(Date.now() + 3_600_000).toISOString()),
      400,
      'invalid_request',
    );
    expect(ahead.message).toContain('future');
    await refused(
      await post('/api/v1/callbacks/recover', c.secret, { since: hoursAgo(2).toISOString(), all: true }),
      400,
      'invalid_request',
      'all',
    );
    await refused(await post('/api/v1/callbacks/recover', c.secret, null, '{"since":'), 400, 'invalid_json');
    await refused(await post('/api/v1/callbacks/recover', undefined, { since: hoursAgo(2) }), 401, 'missing_api_key');
    const reader = await makeKey(ctx.db, c.ws.id, { scopes: ['tasks.read'] });
    await refused(await recover(reader, hoursAgo(2).toISOString()), 403, 'insufficient_scope');
    const member = await makeMember(ctx.db, c.ws.id, 'member');
    const memberKey = await makeKey(ctx.db, c.ws.id);
    await ctx.db.apiKey.update({
      where: { id: memberKey.key.id },
      data: { creatorId: member.user.id, createdVia: 'dashboard' },
    });
    await refused(await recover(memberKey, hoursAgo(2).toISOString()), 403, 'insufficient_role');
    expect(await stateOf(id)).toEqual({ state: 'parked', round: 1 });
  });
});

describe('POST /api/v1/callbacks/test', () => {
  const test = (c: { secret: string }, url: unknown) => post('/api/v1/callbacks/test', c.secret, { url });

  it('posts a signed sample completion that the standardwebhooks package and the spec recipe verify', async () => {
    const c = await makeCustomer(ctx.db);
    const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, c.ws.id, newCallbackSecret)).secret;
    const res = await test(c, `${receiver.url}/ok/1`);
    expect(res.status).toBe(200);
    const result = await jsonOf(res);
    expect(result).toEqual({
      object: 'callback_test',
      url: `${receiver.url}/ok/1`,
      task_id: expect.stringMatching(/^tsk_sample[0-9a-z]{16}$/),
      delivery_id: deliveryIdFor(result.task_id, 1),
      webhook_id: webhookIdFor(result.task_id, 'completed'),
      status_code: 201,
      delivered: true,
      latency_ms: expect.any(Number),
      response_head: 'accepted '.repeat(300).slice(0, 1024),
      error: null,
    });
    expect(result.latency_ms).toBeGreaterThanOrEqual(0);
    const arrival = arrivals.find((a) => a.path === '/ok/1')!;
    const { headers, body } = arrival;
    expect(headers).toMatchObject({
      'svc-task-id': result.task_id,
      'svc-delivery-id': result.delivery_id,
      'webhook-id': result.webhook_id,
      'content-type': 'application/json',
    });
    const envelope = new Webhook(secret).verify(body, headers as Record<string, string>) as Record<string, unknown>;
    expect(envelope).toMatchObject({ object: 'task', task_id: result.task_id, status: 'completed' });
    expect(envelope.output).toMatchObject({ url: expect.any(String), archive_status: 'pending' });
    expect(verifyCallback(body, headers, secret)).toMatchObject({ taskId: result.task_id });
    const t = Number(headers['webhook-timestamp']);
    const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
    expect(headers['svc-signature']).toBe(`t=${t},v1=${v1}`);

    // After a rotation both secrets sign, in both schemes.
    const rotated = (await callbackRepository.rotate(ctx.db, ctx.secrets, c.ws.id, newCallbackSecret)).secret;
    expect((await jsonOf(await test(c, `${receiver.url}/ok/2`))).delivered).toBe(true);
    const second = arrivals.find((a) => a.path === '/ok/2')!;
    expect(second.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    for (const s of [secret, rotated]) {
      expect(() => new Webhook(s).verify(second.body, second.headers as Record<string, string>)).not.toThrow();
      expect(() => verifyCallback(second.body, second.headers, s)).not.toThrow();
    }
  });

  it("reports a receiver's failure as its answer: status, first bytes, or unreachable", async () => {
    const c = await makeCustomer(ctx.db);
    expect(await jsonOf(await test(c, `${receiver.url}/busy`))).toMatchObject({
      status_code: 503,
      delivered: false,
      response_head: 'try later',
      error: 'http_status: the receiver answered 503.',
    });
    // A port nothing listens on (bound, then closed).
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = s.address() as { port: number };
        s.close(() => resolve(p));
      });
    });
    expect(await jsonOf(await test(c, `https://127.0.0.1:${port}/h`))).toMatchObject({
      status_code: null,
      delivered: false,
      response_head: null,
      error: expect.stringMatching(/^unreachable: /),
    });
  });

  it('refuses URLs a callback_url may not be, and bad input, in the error shape, sending nothing', async () => {
    const c = await makeCustomer(ctx.db);
    const before = arrivals.length;
    const http = await errorOf(await test(c, receiver.url.replace('https:', 'http:')), 400, 'invalid_callback_url');
    expect(http.message).toContain('scheme');
    await errorOf(await test(c, 'https://10.1.2.3/hook'), 400, 'invalid_callback_url');
    await errorOf(await test(c, 'https://user:pw@127.0.0.1/hook'), 400, 'invalid_callback_url');
    expect((await errorOf(await test(c, 42), 400, 'invalid_request')).param).toBe('url');
    expect((await errorOf(await test(c, ''), 400, 'invalid_request')).param).toBe('url');
    await errorOf(
      await test(await makeKey(ctx.db, c.ws.id, { scopes: ['tasks.read'] }), 'x'),
      403,
      'insufficient_scope',
    );
    expect(arrivals.length).toBe(before);
  });

  it(`takes at most ${TEST_CALLBACKS_PER_MINUTE} a minute per workspace`, async () => {
    const c = await makeCustomer(ctx.db);
    const other = await makeCustomer(ctx.db);
    for (let i = 0; i < TEST_CALLBACKS_PER_MINUTE; i++) {
      expect((await test(c, `${receiver.url}/ok/limit-${i}`)).status).toBe(200);
    }
    const res = await test(c, `${receiver.url}/ok/limit-over`);
    await errorOf(res, 429, 'rate_limit_exceeded');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(arrivals.some((a) => a.path === '/ok/limit-over')).toBe(false);
    // Another workspace's window is its own.
    expect((await test(other, `${receiver.url}/ok/limit-other`)).status).toBe(200);
  });
});
