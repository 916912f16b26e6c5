// POST /api/v1/evaluate end to end: the real edge app on a socket, the real worker, real Postgres and Redis, and
// the upstream-sim as the provider. Answers, usage and cost are predicted with the sim's own deterministic functions.
import { EvaluateRun, type EvaluateReply, type EvaluateRunResult, type Question } from '@gensvc/contracts';
import { toAmount } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { createRedisConnection, jobIdOf, scheduleEvaluate } from '@gensvc/queue';
import { addSimModel, eventually, jsonOf, makeCustomer, useTestContext } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';
import { expectReleased } from '../../edge/src/billing-test-support';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { expectedAnswers, startSim, usageFor, type Sim } from '../../upstream-sim/src/index';
import type { EvaluateWorker } from './evaluate-worker';
import { startWorker } from './worker-under-test';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let worker: EvaluateWorker;
/** Edges started by a describe block, whose leases money() gives back too. */
const extraEdges: EdgeUnderTest[] = [];
const OPEN_MS = 400;

beforeAll(async () => {
  sim = await startSim();
  edge = await startEdge(ctx);
  worker = await startWorker(ctx, { breaker: { failureThreshold: 3, openMs: OPEN_MS } });
});
afterAll(async () => {
  await worker?.close();
  await edge?.close();
  await sim?.close();
});
afterEach(() => sim.faults.clear());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Every reply published on `channel` from now on, as the edge that listens there receives it: the worker's result
 * of a job lives only there (a completed evaluate job is removed as it completes).
 */
async function listen(channel: string): Promise<{ replies: EvaluateReply[]; close: () => void }> {
  const subscriber = createRedisConnection(ctx.config.redisUrl, { name: 'test:replies' });
  const replies: EvaluateReply[] = [];
  subscriber.on('message', (_ch: string, m: string) => replies.push(JSON.parse(m) as EvaluateReply));
  await subscriber.subscribe(channel);
  return { replies, close: () => subscriber.disconnect() };
}

/** The one result the worker replied on `heard`'s channel, once it has; a second reply fails the test. */
async function onlyResult(heard: { replies: EvaluateReply[] }): Promise<EvaluateRunResult> {
  await eventually(() => heard.replies.length > 0, "the worker's reply");
  await sleep(50);
  expect(heard.replies).toHaveLength(1);
  const reply = heard.replies[0]!;
  if (!('result' in reply)) throw new Error(`the worker failed the job: ${JSON.stringify(reply)}`);
  return reply.result;
}

function post(url: string, secret: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(`${url}/api/v1/evaluate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal && { signal }),
  });
}

/**
 * Charges, key and balance of one customer, to compare before and after, once the edges' leases of the workspace
 * have given back what they hold unused: `held` counts rows still holding money.
 */
async function money(db: TestDb, workspaceId: string, keyId: string) {
  await Promise.all([edge, ...extraEdges].map((e) => e.deps.holds.leases.giveBack(workspaceId)));
  const [charges, key, ws, held] = await Promise.all([
    db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' }, orderBy: { createdAt: 'asc' } }),
    db.apiKey.findUniqueOrThrow({ where: { id: keyId } }),
    db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
    db.reservation.count({ where: { workspaceId, state: 'held', amount: { gt: 0n } } }),
  ]);
  return { charges, spent: key.spent, reserved: key.reserved, balance: ws.balance, held };
}

/** Exact deep equality (every digit of every number; jsonb keeps no key order): a replay answers the first answer. */
function expectSameNumbers(actual: unknown, expected: unknown): void {
  expect(actual).toEqual(expected);
}

const calls = (channels: string[]) =>
  sim
    .requests()
    .filter((r) => channels.includes(r.channel))
    .map((r) => `${r.channel}:${r.status ?? r.outcome}`);

const questions: Record<string, Question> = {
  relevant: { type: 'boolean', instructions: 'Does the reply answer the question?' },
  quality: { type: 'score', instructions: 'How good is the reply?', criteria: ['poor', 'fair', 'good', 'excellent'] },
  tone: { type: 'choice', instructions: 'What is the tone?', choices: ['formal', 'casual', 'rude'] },
};
const state = { question: 'What is the capital of France?', reply: 'Paris, of course.', turns: [1, 2, 3] };

describe('answers', () => {
  it('answers boolean, score and choice questions with answers, usage and exact cost, charged once', async () => {
    const { model } = await addSimModel(ctx.db, sim.url, { id: 'sim/judge', channels: [{ name: 'main' }] });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const res = await post(edge.url, secret, { model: 'sim/judge', state, questions });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);

    const sent = { state, questions };
    const usage = usageFor(sent);
    const cost = costOf(model, usage);
    expect(cost).toBeGreaterThan(0n);
    expect(body).toEqual({
      model: 'sim/judge',
      answers: expectedAnswers(sent),
      usage,
      cost: { amount: toAmount(cost), currency: 'USD' },
    });
    expect(res.headers.get('x-ratelimit-limit-rpm')).toBe('300');

    const after = await money(ctx.db, ws.id, key.id);
    expect(after.charges).toHaveLength(1);
    expect(after.charges[0]).toMatchObject({
      requestId: res.headers.get('x-request-id'),
      amount: -cost,
      apiKeyId: key.id,
      model: 'sim/judge',
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
    });
    expect(after).toMatchObject({ spent: cost, reserved: 0n, balance: ws.balance - cost, held: 0 });
    // The provider got the model's name at the provider (the part after the slash) and the channel's secret.
    expect(
      sim
        .requests()
        .filter((r) => r.channel === 'main')
        .map((r) => [r.model, r.status, r.path]),
    ).toEqual([['judge', 200, '/evaluate']]);
  });

  it('gives each caller its own answer and charge when two send the same X-Request-Id at once', async () => {
    await addSimModel(ctx.db, sim.url, { id: 'sim/same-id', channels: [{ name: 'sameid' }] });
    const a = await makeCustomer(ctx.db);
    const b = await makeCustomer(ctx.db);
    const bodyA = { model: 'sim/same-id', state: 'first caller', questions: { q: questions.relevant! } };
    const bodyB = { model: 'sim/same-id', state: 'second caller, another state', questions: { t: questions.tone! } };
    const [ra, rb] = await Promise.all([
      post(edge.url, a.secret, bodyA, { 'x-request-id': 'chosen-by-callers' }),
      post(edge.url, b.secret, bodyB, { 'x-request-id': 'chosen-by-callers' }),
    ]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect((await jsonOf(ra)).answers).toEqual(expectedAnswers({ state: bodyA.state, questions: bodyA.questions }));
    expect((await jsonOf(rb)).answers).toEqual(expectedAnswers({ state: bodyB.state, questions: bodyB.questions }));
    expect((await money(ctx.db, a.ws.id, a.key.id)).charges).toHaveLength(1);
    expect((await money(ctx.db, b.ws.id, b.key.id)).charges).toHaveLength(1);
  });

  it("charges input tokens only for an input-only model, and sends the route's upstream model name", async () => {
    const { model } = await addSimModel(ctx.db, sim.url, {
      id: 'sim/eval-input-only',
      inputOnly: true,
      inputPricePerMTok: 7_000_000n,
      outputPricePerMTok: 90_000_000n,
      channels: [{ name: 'inonly', upstreamModel: 'scorer-v2', evaluatePath: '/v2/evaluate' }],
    });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const q: Record<string, Question> = { ok: { type: 'boolean', instructions: 'Is it fine?' } };
    const res = await post(edge.url, secret, { model: model.id, state: 'a plain string state', questions: q });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    const usage = usageFor({ state: 'a plain string state', questions: q });
    const inputOnlyCost = (BigInt(usage.inputTokens) * 7_000_000n + 999_999n) / 1_000_000n;
    expect(costOf(model, usage)).toBe(inputOnlyCost);
    expect(body.usage).toEqual(usage);
    expect(body.cost).toEqual({ amount: toAmount(inputOnlyCost), currency: 'USD' });
    expect((await money(ctx.db, ws.id, key.id)).spent).toBe(inputOnlyCost);
    expect(
      sim
        .requests()
        .filter((r) => r.channel === 'inonly')
        .map((r) => [r.model, r.path]),
    ).toEqual([['scorer-v2', '/v2/evaluate']]);
  });

  it('replays an Idempotency-Key with the same body, charging once; another body under the key is a 409', async () => {
    await addSimModel(ctx.db, sim.url, { id: 'sim/idem', channels: [{ name: 'idem' }] });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const body = { model: 'sim/idem', state, questions };
    const first = await post(edge.url, secret, body, { 'idempotency-key': 'eval-1' });
    const second = await post(edge.url, secret, body, { 'idempotency-key': 'eval-1' });
    expect([first.status, second.status]).toEqual([200, 200]);
    const [a, b] = [await jsonOf(first), await jsonOf(second)];
    expectSameNumbers(b, a);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const other = await post(edge.url, secret, { ...body, state: 'something else' }, { 'idempotency-key': 'eval-1' });
    expect(other.status).toBe(409);
    expect((await jsonOf(other)).error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });

    const after = await money(ctx.db, ws.id, key.id);
    expect(after.charges).toHaveLength(1);
    expect(after.charges[0]!.requestId).toBe(first.headers.get('x-request-id'));
    expect(after.spent).toBe(-after.charges[0]!.amount);
    expect(calls(['idem'])).toEqual(['idem:200']);
  });
});

describe('failover', () => {
  const twoChannels = (id: string, a: string, b: string, timeoutMs = 10_000) =>
    addSimModel(ctx.db, sim.url, {
      id,
      channels: [
        { name: a, priority: 10, timeoutMs },
        { name: b, priority: 0 },
      ],
    });

  it.each([
    ['a 500', 'f1', { status: 500 }, '500'],
    ['a 429', 'f2', { status: 429 }, '429'],
    ['a reset connection', 'f3', { reset: true as const }, 'reset'],
    ['a hang past the channel timeout', 'f4', { hang: true as const }, 'hang'],
  ])('answers from the second channel after %s on the first, charged once', async (_what, name, fault, firstCall) => {
    const [a, b] = [`${name}a`, `${name}b`];
    await twoChannels(`sim/${a}`, a, b, 300);
    sim.faults.add({ channel: a, ...fault });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const res = await post(edge.url, secret, { model: `sim/${a}`, state, questions });
    expect(res.status).toBe(200);
    expect((await jsonOf(res)).answers).toEqual(expectedAnswers({ state, questions }));
    // The request log shows the order: the higher-priority channel first, then the other.
    await eventually(() => calls([a, b]).length >= 2, 'both calls in the request log');
    expect(calls([a, b])).toEqual([`${a}:${firstCall}`, `${b}:200`]);
    const after = await money(ctx.db, ws.id, key.id);
    expect(after.charges).toHaveLength(1);
    expect(after.reserved).toBe(0n);
  });

  it('opens the circuit of a failing channel after repeated failures, and closes it by itself', async () => {
    await twoChannels('sim/breaker', 'ba', 'bb');
    const { secret } = await makeCustomer(ctx.db);
    sim.faults.add({ channel: 'ba', status: 503 });
    for (let i = 0; i < 3; i++)
      expect(
        (await post(edge.url, secret, { model: 'sim/breaker', state: `s${i}`, questions: { q: questions.relevant } }))
          .status,
      ).toBe(200);
    expect(calls(['ba', 'bb'])).toEqual(['ba:503', 'bb:200', 'ba:503', 'bb:200', 'ba:503', 'bb:200']);
    sim.resetRequests();
    // Open: the failing channel is not even tried.
    expect(
      (await post(edge.url, secret, { model: 'sim/breaker', state: 's3', questions: { q: questions.relevant } }))
        .status,
    ).toBe(200);
    expect(calls(['ba', 'bb'])).toEqual(['bb:200']);
    expect(worker.breaker.isOpen((await ctx.db.channel.findUniqueOrThrow({ where: { name: 'ba' } })).id)).toBe(true);
    // The channel recovers; after openMs one trial call goes to it, succeeds, and the circuit is closed again.
    sim.faults.clear();
    await sleep(OPEN_MS + 50);
    sim.resetRequests();
    for (let i = 0; i < 2; i++)
      expect(
        (
          await post(edge.url, secret, {
            model: 'sim/breaker',
            state: `s${10 + i}`,
            questions: { q: questions.relevant },
          })
        ).status,
      ).toBe(200);
    expect(calls(['ba', 'bb'])).toEqual(['ba:200', 'ba:200']);
  });
});

describe('invalid upstream answers', () => {
  it.each([
    ['invalid JSON', 'm1', { malformed: 'json' as const }],
    ['a missing answer', 'm2', { malformed: 'shape' as const, shape: 'missing-answer' as const }],
    ['a probability out of range', 'm3', { malformed: 'shape' as const, shape: 'out-of-range' as const }],
    ['probabilities not summing to 1', 'm4', { malformed: 'shape' as const, shape: 'bad-sum' as const }],
    ['an answer of the wrong type', 'm5', { malformed: 'shape' as const, shape: 'wrong-type' as const }],
  ])('%s is a 502 upstream_invalid_response, not charged and not failed over', async (_what, name, fault) => {
    const [a, b] = [`${name}a`, `${name}b`];
    await addSimModel(ctx.db, sim.url, {
      id: `sim/${a}`,
      channels: [
        { name: a, priority: 10 },
        { name: b, priority: 0 },
      ],
    });
    sim.faults.add({ channel: a, ...fault });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const before = await money(ctx.db, ws.id, key.id);
    const res = await post(edge.url, secret, { model: `sim/${a}`, state, questions });
    expect(res.status).toBe(502);
    expect((await jsonOf(res)).error).toMatchObject({
      type: 'upstream_error',
      code: 'upstream_invalid_response',
      request_id: res.headers.get('x-request-id'),
    });
    expect(calls([a, b])).toEqual([`${a}:200`]);
    expect(await money(ctx.db, ws.id, key.id)).toEqual({ ...before, charges: [] });
    expect(before).toMatchObject({ spent: 0n, reserved: 0n, held: 0 });
    await expectReleased(ctx.db, edge.deps.holds.leases, res.headers.get('x-request-id'));
  });

  it('counts invalid answers against the channel: after three, the next goes to the other channel', async () => {
    await addSimModel(ctx.db, sim.url, {
      id: 'sim/mal-breaker',
      channels: [
        { name: 'mba', priority: 10 },
        { name: 'mbb', priority: 0 },
      ],
    });
    sim.faults.add({ channel: 'mba', malformed: 'shape', shape: 'out-of-range' });
    const { secret } = await makeCustomer(ctx.db);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await post(edge.url, secret, { model: 'sim/mal-breaker', state: `s${i}`, questions })).status);
    expect(statuses).toEqual([502, 502, 502, 200]);
    expect(calls(['mba', 'mbb'])).toEqual(['mba:200', 'mba:200', 'mba:200', 'mbb:200']);
  });
});

describe('deadlines: nothing is charged for an answer the caller never got', () => {
  let short: EdgeUnderTest;
  beforeAll(async () => {
    short = await startEdge(ctx, {}, { evaluate: { waitMs: 400 } });
    extraEdges.push(short);
  });
  afterAll(() => short.close());
  // What the worker concluded is read off the reply it published on the short edge's channel, which only this
  // block's calls use, one at a time.
  let heard: Awaited<ReturnType<typeof listen>>;
  beforeEach(async () => {
    heard = await listen(short.deps.evaluateReplies.channel);
  });
  afterEach(() => heard.close());

  it('answers 504 when the answer is late; the worker stops at the deadline and nothing is charged', async () => {
    await addSimModel(ctx.db, sim.url, { id: 'sim/slow', channels: [{ name: 'slow' }] });
    sim.faults.add({ channel: 'slow', latencyMs: 1_500 });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const started = Date.now();
    const res = await post(short.url, secret, { model: 'sim/slow', state, questions });
    expect(res.status).toBe(504);
    expect(Date.now() - started).toBeLessThan(1_400);
    expect((await jsonOf(res)).error).toMatchObject({
      code: 'upstream_timeout',
      message: expect.stringMatching(/nothing was charged/),
    });
    expect(await onlyResult(heard)).toMatchObject({ ok: false, error: { code: 'upstream_timeout' } });
    await expectReleased(ctx.db, short.deps.holds.leases, res.headers.get('x-request-id'));
    expect(await money(ctx.db, ws.id, key.id)).toMatchObject({
      charges: [],
      spent: 0n,
      reserved: 0n,
      balance: ws.balance,
      held: 0,
    });
  });

  it('a job that waited in the queue past its deadline calls no provider and charges nothing', async () => {
    await addSimModel(ctx.db, sim.url, { id: 'sim/queued', channels: [{ name: 'queued' }] });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    // Paused at the queue: every worker stops taking jobs, as when all are busy.
    const queue = edge.deps.queues.get('evaluate');
    await queue.pause();
    let requestId: string;
    try {
      const res = await post(short.url, secret, { model: 'sim/queued', state, questions });
      expect(res.status).toBe(504);
      requestId = res.headers.get('x-request-id')!;
    } finally {
      await queue.resume();
    }
    expect(await onlyResult(heard)).toMatchObject({
      ok: false,
      error: { status: 504, code: 'upstream_timeout', message: expect.stringMatching(/past its deadline/) },
    });
    expect(calls(['queued'])).toEqual([]);
    await expectReleased(ctx.db, short.deps.holds.leases, requestId);
    expect(await money(ctx.db, ws.id, key.id)).toMatchObject({
      charges: [],
      spent: 0n,
      reserved: 0n,
      balance: ws.balance,
      held: 0,
    });
  });

  it('a caller who hangs up gets the hold released; the answer that arrives later is charged by nobody', async () => {
    await addSimModel(ctx.db, sim.url, { id: 'sim/hangup', channels: [{ name: 'hangup' }] });
    sim.faults.add({ channel: 'hangup', latencyMs: 600 });
    const { ws, key, secret } = await makeCustomer(ctx.db);
    const abort = new AbortController();
    const replies = await listen(edge.deps.evaluateReplies.channel);
    try {
      const pending = post(edge.url, secret, { model: 'sim/hangup', state, questions }, {}, abort.signal);
      await sleep(200);
      abort.abort();
      await expect(pending).rejects.toThrow();
      // Still running (the provider answers at 600 ms): the job names the request and the id its reply will carry.
      const [job] = (await edge.deps.queues.get('evaluate').getJobs(['active', 'waiting'])).filter(
        (j) => j.data.model === 'sim/hangup',
      );
      expect(job).toBeDefined();
      // The worker still gets its answer from the provider and replies; the edge no longer waits and charges nothing.
      await eventually(() => calls(['hangup']).includes('hangup:200'), 'the provider to answer the abandoned job');
      expect(calls(['hangup'])).toEqual(['hangup:200']);
      const reply = await eventually(
        () => replies.replies.find((r) => r.id === job!.id),
        'the reply to the abandoned job',
      );
      expect(reply).toMatchObject({ result: { ok: true, usage: usageFor({ state, questions }) } });
      await expectReleased(ctx.db, edge.deps.holds.leases, job!.data.requestId);
    } finally {
      replies.close();
    }
    expect(await money(ctx.db, ws.id, key.id)).toMatchObject({
      charges: [],
      spent: 0n,
      reserved: 0n,
      balance: ws.balance,
      held: 0,
    });
  });

  it('answers a job enqueued twice under one id once, on its reply channel, charging nothing itself', async () => {
    const { model } = await addSimModel(ctx.db, sim.url, { id: 'sim/direct', channels: [{ name: 'direct' }] });
    const { ws, key } = await makeCustomer(ctx.db);
    const replyTo = `${ctx.config.queuePrefix}:evaluate:reply:test`;
    const { replies, close } = await listen(replyTo);
    try {
      const payload = {
        requestId: 'req_direct',
        callId: 'evl_direct',
        workspaceId: ws.id,
        apiKeyId: key.id,
        deadlineAt: Date.now() + 10_000,
        model: model.id,
        request: { state, questions },
        replyTo,
      };
      // Scheduled twice under the same call id, as the edge schedules it: one job (the second add, while the first
      // waits or runs, is a no-op). Both adds leave together, so the second reaches Redis while the first job waits or
      // runs: added one after the other, a loaded machine let the worker finish (and remove) the first job in between,
      // and the second add then made a job of its own (a completed evaluate job is not kept).
      const [first, again] = await Promise.all([
        scheduleEvaluate(edge.deps.queues, payload),
        scheduleEvaluate(edge.deps.queues, payload),
      ]);
      expect(again.id).toBe(first.id);
      expect(first.id).toBe(jobIdOf(EvaluateRun, payload));
      const usage = usageFor({ state, questions });
      const expected = {
        ok: true,
        answers: expectedAnswers({ state, questions }),
        usage,
        cost: costOf(model, usage).toString(),
      };
      await eventually(() => replies.length > 0, 'the reply');
      await sleep(50);
      expect(replies).toEqual([{ id: first.id, result: expected }]);
      // The result lives only in the reply: the completed job is removed as it completes (nothing kept to sweep).
      const queue = edge.deps.queues.get('evaluate');
      await eventually(async () => (await queue.getJob(first.id!)) === undefined, 'the completed job to be removed');
      expect(await queue.getJobCounts('completed')).toEqual({ completed: 0 });
    } finally {
      close();
    }
    expect(await money(ctx.db, ws.id, key.id)).toMatchObject({ charges: [], spent: 0n, reserved: 0n, held: 0 });
    expect(calls(['direct'])).toEqual(['direct:200']);
  });
});
