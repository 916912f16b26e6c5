// The chat and vendor-compatible routes end to end: the official SDKs talk to a real edge (real Postgres, Redis,
// S3), which proxies to the upstream-sim over real sockets. Every answer is checked against the sim's deterministic
// reply, and every call's money against the ledger.
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { modelRepository, type ChannelKind } from '@gensvc/db';
import { addSimChannel, jsonOf, makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';
import OpenAI from 'openai';
import { chatReply, startSim, tokensOf, type Sim } from '../../../../upstream-sim/src';
import {
  expectBalanced,
  expectCharged,
  expectHoldOf,
  expectReleased,
  leaseChargesOf,
  statusOf,
  type Usage,
} from '../../billing-test-support';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let secret: string;
let workspaceId: string;

const PRICES = {
  inputPricePerMTok: 2_000_000n,
  outputPricePerMTok: 8_000_000n,
  inputOnly: false,
  maxOutputTokens: 4096,
};
const CHAT = 'sim/chat-1';

beforeAll(async () => {
  sim = await startSim();
  const channel = (name: string, kind: ChannelKind, priority = 0, timeoutMs = 10_000) =>
    addSimChannel(ctx.db, sim.url, { name, kind, priority, timeoutMs });
  const [oaA, oaB, an, gm, ev, slow] = await Promise.all([
    channel('oa-a', 'openai', 2),
    channel('oa-b', 'openai', 1),
    channel('an', 'anthropic'),
    channel('gm', 'gemini'),
    channel('ev', 'evaluate'),
    channel('slow', 'openai', 5, 300),
  ]);
  await modelRepository.create(ctx.db, {
    id: CHAT,
    kind: 'chat',
    ...PRICES,
    routes: [oaA, oaB, an, gm].map((c) => ({ channelId: c.id })),
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/openai-only',
    kind: 'chat',
    ...PRICES,
    routes: [{ channelId: oaA.id }],
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/renamed',
    kind: 'chat',
    ...PRICES,
    routes: [{ channelId: oaB.id, upstreamModel: 'provider-name-7' }],
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/slow-first',
    kind: 'chat',
    ...PRICES,
    routes: [{ channelId: slow.id }, { channelId: oaB.id }],
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/judge',
    kind: 'evaluation',
    ...PRICES,
    routes: [{ channelId: ev.id }],
  });
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id)).secret;
  edge = await startEdge(ctx);
});

afterAll(async () => {
  await edge?.close();
  await sim?.close();
});

beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const openai = (key = secret, base = '/v1') =>
  new OpenAI({ apiKey: key, baseURL: `${edge.url}${base}`, maxRetries: 0 });
const anthropic = (key = secret) => new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
const google = (key = secret) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: edge.url } });

/** One settled charge of `usage` at CHAT's prices, to this file's workspace. */
const charged = (requestId: string | null, usage: Usage) =>
  expectCharged(ctx.db, requestId, { workspaceId, model: CHAT, prices: PRICES, usage }, edge.deps.holds.leases);

describe('OpenAI chat completions', () => {
  const messages = [{ role: 'user' as const, content: 'Say something deterministic.' }];
  const expected = chatReply(messages);
  const usage = { inputTokens: tokensOf(messages), outputTokens: expected.outputTokens };

  it("answers the sim's reply through the official SDK, on both paths, and charges its usage once", async () => {
    for (const base of ['/v1', '/api/v1']) {
      const { data, response } = await openai(secret, base)
        .chat.completions.create({ model: CHAT, messages })
        .withResponse();
      expect(data.model).toBe(CHAT);
      expect(data.choices[0]!.message.content).toBe(expected.text);
      expect(data.usage).toMatchObject({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens });
      expect(response.headers.get('x-ratelimit-limit-rpm')).toBe('300');
      expect(Number(response.headers.get('x-ratelimit-remaining-rpm'))).toBeLessThan(300);
      expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
      await charged(response.headers.get('x-request-id'), usage);
    }
    // The upstream got its own credential and model name, never the caller's key.
    const calls = sim.requests();
    expect(calls.map((r) => [r.channel, r.model, r.status])).toEqual([
      ['oa-a', 'chat-1', 200],
      ['oa-a', 'chat-1', 200],
    ]);
  });

  it('streams chunk by chunk, counts usage, and hides the usage chunk unless asked for', async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({ model: CHAT, messages, stream: true })
      .withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    let text = '';
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe(expected.text);
    expect(chunks.every((c) => c.model === CHAT && c.choices.length === 1 && !('usage' in c))).toBe(true);
    await charged(response.headers.get('x-request-id'), usage);

    const withUsage = await openai()
      .chat.completions.create({ model: CHAT, messages, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const all = [];
    for await (const chunk of withUsage.data) all.push(chunk);
    const last = all.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens });
    await charged(withUsage.response.headers.get('x-request-id'), usage);
  });

  it('honours max_tokens in the reservation and the answer, and renames the model both ways', async () => {
    const { data, response } = await openai()
      .chat.completions.create({ model: 'sim/renamed', messages, max_tokens: 3 })
      .withResponse();
    expect(data.model).toBe('sim/renamed');
    expect(data.choices[0]!.message.content).toBe(chatReply(messages, 3).text);
    expect(data.usage!.completion_tokens).toBe(3);
    expect(sim.requests()[0]).toMatchObject({ channel: 'oa-b', model: 'provider-name-7' });
    const requestId = response.headers.get('x-request-id')!;
    const entries = await leaseChargesOf(ctx.db, edge.deps.holds.leases, requestId);
    expect(entries.map((e) => e.amount)).toEqual([
      -costOf(PRICES, { inputTokens: tokensOf(messages), outputTokens: 3 }),
    ]);
    // The hold is bounded by the bytes sent upstream (as input tokens) and max_tokens (as output tokens).
    const bytes = Buffer.byteLength(JSON.stringify({ model: 'provider-name-7', messages, max_tokens: 3 }));
    await expectHoldOf(ctx.db, workspaceId, costOf(PRICES, { inputTokens: bytes, outputTokens: 3 }), (key) =>
      statusOf(openai(key).chat.completions.create({ model: 'sim/renamed', messages, max_tokens: 3 })),
    );
  });

  it('rejects an evaluation model with 400 model_not_supported, without calling upstream or charging', async () => {
    const res = await fetch(`${edge.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/judge', messages }),
    });
    expect(res.status).toBe(400);
    const body = await jsonOf(res);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_supported', param: 'model' });
    expect(body.error.message).toMatch(/evaluation model/);
    expect(await ctx.db.reservation.count({ where: { requestId: res.headers.get('x-request-id')! } })).toBe(0);
    expect(sim.requests()).toEqual([]);

    const unknown = await openai()
      .chat.completions.create({ model: 'sim/nope', messages })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    const invalid = await openai()
      .chat.completions.create({ model: CHAT, messages: [] })
      .catch((e) => e);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect(invalid.error).toMatchObject({ code: 'invalid_request', param: 'messages' });
  });

  it("answers a bad key 401 in OpenAI's shape", async () => {
    const err = await openai('gsk_not-a-real-key')
      .chat.completions.create({ model: CHAT, messages })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
    expect(err.error).toMatchObject({ type: 'authentication_error', code: expect.stringMatching(/api_key/) });
  });

  it('answers 402 when the key cap or the balance cannot hold the call, and charges nothing', async () => {
    // The hold is taken while the first call is on its way; once refused, the key (cap) or workspace (balance) is
    // held before calling, so its next calls never reach the upstream.
    const capped = await makeKey(ctx.db, workspaceId, { spendCap: 5n });
    const poor = await makeWorkspace(ctx.db, { balance: 10n });
    const poorKey = await makeKey(ctx.db, poor.id);
    for (const [key, code] of [
      [capped.secret, 'spending_cap_exhausted'],
      [poorKey.secret, 'insufficient_balance'],
    ] as const) {
      const first = await openai(key)
        .chat.completions.create({ model: CHAT, messages })
        .catch((e) => e);
      expect(first.status).toBe(402);
      expect(first.error).toMatchObject({ type: 'billing_error', code });
      const seen = sim.requests().length;
      const again = await openai(key)
        .chat.completions.create({ model: CHAT, messages, stream: true })
        .catch((e) => e);
      expect(again.status).toBe(402);
      expect(again.error).toMatchObject({ code });
      expect(sim.requests()).toHaveLength(seen);
    }
    expect(await ctx.db.reservation.count({ where: { apiKeyId: { in: [capped.key.id, poorKey.key.id] } } })).toBe(0);
    expect(await ctx.db.ledgerEntry.count({ where: { apiKeyId: { in: [capped.key.id, poorKey.key.id] } } })).toBe(0);
    // The workspace's other keys are not held back by one key's cap.
    const { data } = await openai().chat.completions.create({ model: CHAT, messages }).withResponse();
    expect(data.choices[0]!.message.content).toBe(expected.text);
  });

  it('fails over to the next channel on a 500 before the first byte, streaming or not', async () => {
    sim.faults.add({ channel: 'oa-a', status: 500, times: 2 });
    const { data, response } = await openai().chat.completions.create({ model: CHAT, messages }).withResponse();
    expect(data.choices[0]!.message.content).toBe(expected.text);
    await charged(response.headers.get('x-request-id'), usage);

    const streamed = await openai().chat.completions.create({ model: CHAT, messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of streamed.data) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(expected.text);
    await charged(streamed.response.headers.get('x-request-id'), usage);
    expect(sim.requests().map((r) => [r.channel, r.status])).toEqual([
      ['oa-a', 500],
      ['oa-b', 200],
      ['oa-a', 500],
      ['oa-b', 200],
    ]);
  });

  it('fails over when a channel does not answer within its timeout', async () => {
    sim.faults.add({ channel: 'slow', hang: true, times: 1 });
    const started = Date.now();
    const data = await openai().chat.completions.create({ model: 'sim/slow-first', messages });
    expect(data.choices[0]!.message.content).toBe(expected.text);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(
      sim
        .requests()
        .map((r) => r.channel)
        .sort(),
    ).toEqual(['oa-b', 'slow']);
  });

  it('passes a request the provider rejects (4xx) on without failing over, and releases the hold', async () => {
    sim.faults.add({
      channel: 'oa-a',
      status: 400,
      body: {
        error: { message: 'messages[0].content is too long', type: 'invalid_request_error', param: null, code: null },
      },
    });
    const res = await fetch(`${edge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, messages }),
    });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({
      code: 'upstream_rejected_request',
      message: expect.stringContaining('too long'),
    });
    expect(sim.requests().map((r) => r.channel)).toEqual(['oa-a']);
    await expectReleased(ctx.db, edge.deps.holds.leases, res.headers.get('x-request-id'));
  });

  it('ends a cut stream with an error event the SDK throws, and releases the hold (no usage reported)', async () => {
    sim.faults.add({ channel: 'oa-a', cutAfterChunks: 3 });
    const { data: stream, response } = await openai()
      .chat.completions.create({ model: CHAT, messages, stream: true })
      .withResponse();
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String(err.message)).toMatch(/interrupted/);
    expect(text).toBe(expected.pieces.slice(0, 2).join(''));
    // No failover after the first byte: only the cut channel was called.
    expect(sim.requests().map((r) => [r.channel, r.outcome])).toEqual([['oa-a', 'cut']]);
    await expectReleased(ctx.db, edge.deps.holds.leases, response.headers.get('x-request-id'));

    sim.faults.add({ channel: 'oa-a', cutAfterChunks: 2 });
    const raw = await fetch(`${edge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, messages, stream: true }),
    });
    const body = await raw.text();
    expect(body).toMatch(/\ndata: \{"error":\{"message":"[^"]*interrupted/);
    expect(body).not.toContain('[DONE]');
  });

  it('keeps billing a stream whose caller disconnects: the upstream is read to its end and charged', async () => {
    sim.faults.add({ channel: 'oa-a', chunkDelayMs: 20 });
    const abort = new AbortController();
    const res = await fetch(`${edge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, messages, stream: true }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await charged(res.headers.get('x-request-id'), usage);
  });

  it('replays a non-streamed answer byte for byte', async () => {
    const key = `idem-bytes-${Date.now()}`;
    const call = () =>
      fetch(`${edge.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ model: CHAT, messages }),
      });
    const first = await call();
    const firstText = await first.text();
    const again = await call();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
  });

  it('replays a non-streamed answer for a repeated Idempotency-Key and charges once', async () => {
    const key = `idem-${Date.now()}`;
    const first = await openai()
      .chat.completions.create({ model: CHAT, messages }, { headers: { 'Idempotency-Key': key } })
      .withResponse();
    const again = await openai()
      .chat.completions.create({ model: CHAT, messages }, { headers: { 'Idempotency-Key': key } })
      .withResponse();
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.requests()).toHaveLength(1);
    await charged(first.response.headers.get('x-request-id'), usage);
    expect(await ctx.db.reservation.count({ where: { requestId: again.response.headers.get('x-request-id')! } })).toBe(
      0,
    );
  });
});

describe('Anthropic messages', () => {
  const messages = [{ role: 'user' as const, content: 'Hello from the Anthropic SDK.' }];
  const expected = chatReply({ messages }, 200);
  const usage = { inputTokens: tokensOf({ messages }), outputTokens: expected.outputTokens };

  it('answers and streams through the official SDK, charging the reported usage', async () => {
    const { data, response } = await anthropic()
      .messages.create({ model: CHAT, max_tokens: 200, messages })
      .withResponse();
    expect(data.model).toBe(CHAT);
    expect(data.content).toEqual([{ type: 'text', text: expected.text }]);
    expect(data.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
    expect(response.headers.get('x-ratelimit-limit-rpm')).toBe('300');
    await charged(response.headers.get('x-request-id'), usage);

    const streamed = await anthropic()
      .messages.create({ model: CHAT, max_tokens: 200, messages, stream: true })
      .withResponse();
    let text = '';
    const types: string[] = [];
    for await (const event of streamed.data) {
      types.push(event.type);
      if (event.type === 'message_start') expect(event.message.model).toBe(CHAT);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toBe(expected.text);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    await charged(streamed.response.headers.get('x-request-id'), usage);
    expect(sim.requests().map((r) => [r.channel, r.model])).toEqual([
      ['an', 'chat-1'],
      ['an', 'chat-1'],
    ]);
  });

  it("requires anthropic-version and answers errors in Anthropic's shape", async () => {
    const res = await fetch(`${edge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, max_tokens: 10, messages }),
    });
    expect(res.status).toBe(400);
    expect(await jsonOf(res)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('anthropic-version') },
    });

    const bad = await anthropic('gsk_wrong')
      .messages.create({ model: CHAT, max_tokens: 10, messages })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(bad.error).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });

    const judge = await anthropic()
      .messages.create({ model: 'sim/judge', max_tokens: 10, messages })
      .catch((e) => e);
    expect(judge.status).toBe(400);
    expect(judge.error.error.message).toMatch(/evaluation model/);

    const elsewhere = await anthropic()
      .messages.create({ model: 'sim/openai-only', max_tokens: 10, messages })
      .catch((e) => e);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.error).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: expect.stringMatching(
          /not served over the Anthropic messages protocol; it is available on: OpenAI chat completions/,
        ),
      },
    });
    expect(sim.requests()).toEqual([]);
  });

  it('ends a cut stream with an error event and charges the usage reported before the cut', async () => {
    // message_start (input tokens, 1 output token so far), content_block_start, ping — then the connection drops.
    sim.faults.add({ channel: 'an', cutAfterChunks: 3 });
    const streamed = await anthropic()
      .messages.create({ model: CHAT, max_tokens: 200, messages, stream: true })
      .withResponse();
    const err = await (async () => {
      for await (const _ of streamed.data) void _;
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    const requestId = streamed.response.headers.get('x-request-id')!;
    await charged(requestId, { inputTokens: usage.inputTokens, outputTokens: 1 });

    // Cut right after its first event: the cut usually lands while the hold is still being confirmed, before the
    // caller is attached, and must still reach the caller as an error after that event.
    sim.faults.add({ channel: 'an', cutAfterChunks: 1 });
    const early = await fetch(`${edge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, max_tokens: 200, messages, stream: true }),
    });
    const text = await early.text();
    expect(text).toMatch(/^event: message_start\ndata: \{[^\n]*"model":"sim\/chat-1"/);
    expect(text).toMatch(
      /\n\nevent: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"[^"]*interrupted/,
    );
    expect(text).not.toContain('message_stop');
    await charged(early.headers.get('x-request-id'), { inputTokens: usage.inputTokens, outputTokens: 1 });
  });
});

describe('Gemini generateContent', () => {
  const contents = [{ role: 'user', parts: [{ text: 'Hello from the Google SDK.' }] }];
  const expected = chatReply({ contents });
  const usage = { inputTokens: tokensOf({ contents }), outputTokens: expected.outputTokens };

  it('answers and streams through the official SDK, charging the reported usage', async () => {
    const answer = await google().models.generateContent({ model: CHAT, contents });
    expect(answer.text).toBe(expected.text);
    expect(answer.modelVersion).toBe(CHAT);
    expect(answer.usageMetadata).toMatchObject({
      promptTokenCount: usage.inputTokens,
      candidatesTokenCount: usage.outputTokens,
    });
    const headers = answer.sdkHttpResponse!.headers!;
    expect(headers['x-ratelimit-limit-rpm']).toBe('300');
    await charged(headers['x-request-id']!, usage);

    let text = '';
    let requestId: string | undefined;
    for await (const chunk of await google().models.generateContentStream({ model: CHAT, contents })) {
      text += chunk.text ?? '';
      requestId ??= chunk.sdkHttpResponse?.headers?.['x-request-id'];
      expect(chunk.modelVersion).toBe(CHAT);
    }
    expect(text).toBe(expected.text);
    await charged(requestId!, usage);
    expect(sim.requests().map((r) => [r.channel, r.model])).toEqual([
      ['gm', 'chat-1'],
      ['gm', 'chat-1'],
    ]);
  });

  it("streams Google's JSON array without alt=sse, with x-goog-api-key or a bearer key", async () => {
    for (const auth of [{ 'x-goog-api-key': secret }, { authorization: `Bearer ${secret}` }] as Record<
      string,
      string
    >[]) {
      const res = await fetch(`${edge.url}/v1beta/models/${CHAT}:streamGenerateContent`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ contents }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const items = JSON.parse(await res.text()) as {
        candidates: { content: { parts: { text: string }[] } }[];
        modelVersion: string;
      }[];
      expect(items.map((i) => i.candidates[0]!.content.parts[0]!.text).join('')).toBe(expected.text);
      expect(items.every((i) => i.modelVersion === CHAT)).toBe(true);
      await charged(res.headers.get('x-request-id'), usage);
    }
  });

  it("answers errors in Google's shape", async () => {
    const bad = await fetch(`${edge.url}/v1beta/models/${CHAT}:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'gsk_wrong', 'content-type': 'application/json' },
      body: JSON.stringify({ contents }),
    });
    expect(bad.status).toBe(401);
    expect(await jsonOf(bad)).toEqual({ error: { code: 401, message: expect.any(String), status: 'UNAUTHENTICATED' } });

    const judge = await fetch(`${edge.url}/v1beta/models/sim/judge:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ contents }),
    });
    expect(judge.status).toBe(400);
    expect(await jsonOf(judge)).toEqual({
      error: { code: 400, message: expect.stringMatching(/evaluation model/), status: 'INVALID_ARGUMENT' },
    });
  });

  it('ends a cut stream with an error item, the array unclosed, and charges the usage reported so far', async () => {
    sim.faults.add({ channel: 'gm', cutAfterChunks: 2 });
    const res = await fetch(`${edge.url}/v1beta/models/${CHAT}:streamGenerateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ contents }),
    });
    const text = await res.text();
    expect(text).toMatch(/,\r\n\{"error":\{"code":502,"message":"[^"]*interrupted[^"]*","status":"UNAVAILABLE"\}\}$/);
    expect(() => JSON.parse(text)).toThrow();
    // Gemini's usage is cumulative per chunk: two chunks carried two output tokens.
    await charged(res.headers.get('x-request-id'), { inputTokens: usage.inputTokens, outputTokens: 2 });

    sim.faults.add({ channel: 'gm', cutAfterChunks: 2 });
    const err = await (async () => {
      for await (const _ of await google().models.generateContentStream({ model: CHAT, contents })) void _;
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
  });
});

describe('the books', () => {
  it('balance + held = ledger after everything above', async () => {
    await edge.deps.holds.leases.flushed();
    await expectBalanced(ctx.db, workspaceId);
    // Closed (as at shutdown), the leases give back everything they hold.
    await edge.deps.holds.leases.close();
    expect(await ctx.db.reservation.count({ where: { workspaceId, state: 'held' } })).toBe(0);
    await expectBalanced(ctx.db, workspaceId);
  });
});
