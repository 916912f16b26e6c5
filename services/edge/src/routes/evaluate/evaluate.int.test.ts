// What the edge refuses before anything is held or queued, and what it does when no answer comes. No worker
// runs here: every request that got as far as the queue would show up as a waiting job.
import { channelRepository, modelRepository } from '@gensvc/db';
import { createQueues } from '@gensvc/queue';
import { jsonOf, makeCustomer, useTestContext } from '@gensvc/testing';
import { reservationFor } from '@gensvc/upstream';
import { expectReleased } from '../../billing-test-support';
import type { EdgeDeps } from '../../deps';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const ctx = useTestContext();
let edge: EdgeUnderTest;

const questions = {
  q1: { type: 'boolean', instructions: 'Is it polite?' },
  q2: { type: 'score', instructions: 'How clear?', criteria: ['unclear', 'clear'] },
  q3: { type: 'choice', instructions: 'Which language?', choices: ['en', 'fr'] },
};
const valid = { model: 'acme/judge', state: { text: 'Bonjour' }, questions };

beforeAll(async () => {
  edge = await startEdge(ctx);
  // Nothing listens here: no request in this file reaches a provider.
  const channel = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'nowhere',
    kind: 'evaluate',
    baseUrl: 'http://127.0.0.1:9/none',
  });
  const routes = [{ channelId: channel.id }];
  await modelRepository.create(ctx.db, {
    id: 'acme/judge',
    kind: 'evaluation',
    inputPricePerMTok: 1_000_000n,
    outputPricePerMTok: 2_000_000n,
    routes,
  });
  await modelRepository.create(ctx.db, { id: 'acme/chatty', kind: 'chat', routes });
  await modelRepository.create(ctx.db, { id: 'acme/retired', kind: 'evaluation', routes });
  await ctx.db.model.update({ where: { id: 'acme/retired' }, data: { enabled: false } });
});
afterAll(() => edge.close());

const post = (url: string, secret: string | null, body: string) =>
  fetch(`${url}/api/v1/evaluate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret && { authorization: `Bearer ${secret}` }) },
    body,
  });

const jobCount = async () => {
  const counts = await edge.deps.queues.get('evaluate').getJobCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
};

describe('validation: 400 naming the field, nothing reserved, nothing queued', () => {
  const q = (question: unknown) => ({ ...valid, questions: { q1: question } });
  const many = (n: number) => ({
    ...valid,
    questions: Object.fromEntries(Array.from({ length: n }, (_, i) => [`q${i}`, questions.q1])),
  });

  it.each<[string, unknown, string | null, string]>([
    ['no model', { state: 's', questions }, 'model', 'invalid_request'],
    ['a numeric model', { ...valid, model: 42 }, 'model', 'invalid_request'],
    ['no state', { model: valid.model, questions }, 'state', 'invalid_request'],
    ['a numeric state', { ...valid, state: 3 }, 'state', 'invalid_request'],
    ['a null state', { ...valid, state: null }, 'state', 'invalid_request'],
    ['no questions', { model: valid.model, state: 's' }, 'questions', 'invalid_request'],
    ['questions as an array', { ...valid, questions: [questions.q1] }, 'questions', 'invalid_request'],
    ['no question at all', { ...valid, questions: {} }, 'questions', 'invalid_request'],
    ['21 questions', many(21), 'questions', 'invalid_request'],
    ['an unsafe question id', { ...valid, questions: { 'q 1': questions.q1 } }, 'questions.q 1', 'invalid_request'],
    ['a dotted question id', { ...valid, questions: { 'a.b': questions.q1 } }, 'questions.a.b', 'invalid_request'],
    ['a question that is a string', q('Is it?'), 'questions.q1', 'invalid_request'],
    ['an unknown question type', q({ type: 'essay', instructions: 'x' }), 'questions.q1.type', 'invalid_request'],
    ['a question without type', q({ instructions: 'x' }), 'questions.q1.type', 'invalid_request'],
    ['a question without instructions', q({ type: 'boolean' }), 'questions.q1.instructions', 'invalid_request'],
    ['numeric instructions', q({ type: 'boolean', instructions: 7 }), 'questions.q1.instructions', 'invalid_request'],
    [
      'a score question without criteria',
      q({ type: 'score', instructions: 'x' }),
      'questions.q1.criteria',
      'invalid_request',
    ],
    [
      'a score question with one level',
      q({ type: 'score', instructions: 'x', criteria: ['only'] }),
      'questions.q1.criteria',
      'invalid_request',
    ],
    [
      'a non-string criterion',
      q({ type: 'score', instructions: 'x', criteria: ['a', 2] }),
      'questions.q1.criteria.1',
      'invalid_request',
    ],
    [
      'a choice question without choices',
      q({ type: 'choice', instructions: 'x' }),
      'questions.q1.choices',
      'invalid_request',
    ],
    [
      'a single choice',
      q({ type: 'choice', instructions: 'x', choices: ['a'] }),
      'questions.q1.choices',
      'invalid_request',
    ],
    [
      'repeated choices',
      q({ type: 'choice', instructions: 'x', choices: ['a', 'b', 'a'] }),
      'questions.q1.choices',
      'invalid_request',
    ],
    [
      'criteria on a boolean question',
      q({ type: 'boolean', instructions: 'x', criteria: ['a', 'b'] }),
      'questions.q1.criteria',
      'invalid_request',
    ],
    ['an unknown top-level field', { ...valid, temperature: 0 }, 'temperature', 'invalid_request'],
    ['a body that is an array', [valid], null, 'invalid_request'],
    ['a chat model', { ...valid, model: 'acme/chatty' }, 'model', 'model_not_supported'],
    ['a disabled model', { ...valid, model: 'acme/retired' }, 'model', 'model_not_supported'],
  ])('%s', async (_what, body, param, code) => {
    const { ws, secret } = await makeCustomer(ctx.db);
    const res = await post(edge.url, secret, JSON.stringify(body));
    expect(res.status).toBe(400);
    const { error } = await jsonOf(res);
    expect(error).toMatchObject({
      type: 'invalid_request_error',
      code,
      param,
      request_id: res.headers.get('x-request-id'),
    });
    if (param)
      expect(error.message).toContain(code === 'invalid_request' ? param : body && (body as { model: string }).model);
    expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id } })).toBe(0);
  });

  it('answers an unknown model 404 model_not_found, as every route does, holding nothing', async () => {
    const { ws, secret } = await makeCustomer(ctx.db);
    const res = await post(edge.url, secret, JSON.stringify({ ...valid, model: 'acme/nope' }));
    expect(res.status).toBe(404);
    const { error } = await jsonOf(res);
    expect(error).toMatchObject({ type: 'not_found_error', code: 'model_not_found', param: 'model' });
    expect(error.message).toContain('acme/nope');
    expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id } })).toBe(0);
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const { secret } = await makeCustomer(ctx.db);
    const res = await post(edge.url, secret, '{"model": "acme/judge",');
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error.code).toBe('invalid_json');
  });

  it('accepts exactly 20 questions (the request gets as far as the queue)', async () => {
    const short = await shortWaitEdge(50);
    try {
      const { secret } = await makeCustomer(ctx.db);
      const res = await post(short.url, secret, JSON.stringify(many(20)));
      expect(res.status).toBe(504);
    } finally {
      await short.close();
    }
  });

  afterAll(async () => {
    // Only the 20-question request above was queued.
    expect(await jobCount()).toBe(1);
  });
});

describe('credentials and money', () => {
  it('401 without a key, 403 without the llm.evaluate scope', async () => {
    expect((await post(edge.url, null, JSON.stringify(valid))).status).toBe(401);
    const { secret } = await makeCustomer(ctx.db, { scopes: ['llm.chat'] });
    const res = await post(edge.url, secret, JSON.stringify(valid));
    expect(res.status).toBe(403);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'insufficient_scope', param: 'llm.evaluate' });
  });

  it('402 when the key cap or the balance cannot hold the reservation, with nothing held or queued', async () => {
    const before = await jobCount();
    const model = (await edge.deps.catalog.model('acme/judge'))!;
    const bound = reservationFor(model, {
      inputBytes: Buffer.byteLength(JSON.stringify({ state: valid.state, questions })),
    });
    const capped = await makeCustomer(ctx.db, { spendCap: bound - 1n });
    const poor = await makeCustomer(ctx.db, { balance: bound - 1n });
    const capRes = await post(edge.url, capped.secret, JSON.stringify(valid));
    const poorRes = await post(edge.url, poor.secret, JSON.stringify(valid));
    expect([capRes.status, poorRes.status]).toEqual([402, 402]);
    expect((await jsonOf(capRes)).error).toMatchObject({ type: 'billing_error', code: 'spending_cap_exhausted' });
    expect((await jsonOf(poorRes)).error).toMatchObject({ type: 'billing_error', code: 'insufficient_balance' });
    for (const c of [capped, poor]) {
      expect(await ctx.db.reservation.count({ where: { workspaceId: c.ws.id } })).toBe(0);
      expect(await ctx.db.apiKey.findUniqueOrThrow({ where: { id: c.key.id } })).toMatchObject({
        reserved: 0n,
        spent: 0n,
      });
    }
    expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: poor.ws.id } })).balance).toBe(bound - 1n);
    expect(await jobCount()).toBe(before);
  });
});

describe('no answer in time', () => {
  it('answers 504 upstream_timeout, gives the hold back; the job keeps its deadline and reply channel', async () => {
    const short = await shortWaitEdge(300);
    let requestId: string | null = null;
    const { ws, key, secret } = await makeCustomer(ctx.db, { spendCap: 5_000_000n });
    try {
      const started = Date.now();
      const res = await post(short.url, secret, JSON.stringify(valid));
      requestId = res.headers.get('x-request-id');
      expect(res.status).toBe(504);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect((await jsonOf(res)).error).toMatchObject({
        type: 'upstream_error',
        code: 'upstream_timeout',
        message: expect.stringContaining('nothing was charged'),
      });
      // The hold was given back to the lease at once: nothing held in memory, nothing charged.
      await expectReleased(ctx.db, short.deps.holds.leases, requestId);
      // The job waits for a worker with the ids, deadline and reply channel it needs to do nothing once it runs.
      const [job, ...others] = (await edge.deps.queues.get('evaluate').getJobs(['waiting'])).filter(
        (j) => j.data.requestId === requestId,
      );
      expect(others).toEqual([]);
      // Its id is the edge's own, never the request id a caller may choose.
      expect(job!.id).toMatch(/^evaluate\.run\/evl_[0-9A-Za-z]{22}$/);
      expect(await job!.getState()).toBe('waiting');
      expect(job!.opts.attempts).toBe(1);
      expect(job!.data).toMatchObject({
        requestId,
        workspaceId: ws.id,
        apiKeyId: key.id,
        model: 'acme/judge',
        request: { state: valid.state, questions },
        replyTo: short.deps.evaluateReplies.channel,
      });
      expect(job!.data.deadlineAt).toBeGreaterThanOrEqual(started + 300);
      expect(job!.data.deadlineAt).toBeLessThanOrEqual(Date.now());
    } finally {
      await short.close();
    }
    // Closed, the edge gave its lease back: the key and the balance are whole again.
    expect(await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).toMatchObject({ reserved: 0n, spent: 0n });
    expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } })).balance).toBe(10_000_000n);
    expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id, state: 'held' } })).toBe(0);
    expect(await ctx.db.ledgerEntry.count({ where: { workspaceId: ws.id, kind: 'charge' } })).toBe(0);
  });
});

describe('the queue cannot take the job', () => {
  it('answers 503 and releases the hold', async () => {
    // Queues that are closed (as during shutdown) refuse every add.
    const queues = createQueues({
      connection: ctx.redis,
      prefix: ctx.config.queuePrefix,
      logger: { info() {}, warn() {}, error() {} },
    });
    const broken = await shortWaitEdge(5_000, { queues });
    await queues.close();
    const { ws, key, secret } = await makeCustomer(ctx.db);
    try {
      const res = await post(broken.url, secret, JSON.stringify(valid));
      expect(res.status).toBe(503);
      expect((await jsonOf(res)).error).toMatchObject({
        code: 'service_unavailable',
        message: expect.stringContaining('nothing was charged'),
      });
      await expectReleased(ctx.db, broken.deps.holds.leases, res.headers.get('x-request-id'));
    } finally {
      await broken.close();
    }
    expect(await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).toMatchObject({ reserved: 0n, spent: 0n });
    expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } })).balance).toBe(10_000_000n);
    expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id, state: 'held' } })).toBe(0);
  });
});

/** Another edge whose evaluate route waits `waitMs` for an answer. */
const shortWaitEdge = (waitMs: number, overrides: Partial<EdgeDeps> = {}) =>
  startEdge(ctx, overrides, { evaluate: { waitMs } });
