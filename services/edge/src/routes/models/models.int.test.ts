// Model discovery in the three vendor shapes, through the official SDKs, against a real edge (Postgres, Redis, S3):
// what is listed is exactly the usable models the key may use, and a key limited to some models is refused the
// others (403 model_not_allowed) on every paid route before anything is held.
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { apiKeyRepository, channelRepository, modelRepository, type ChannelKind } from '@gensvc/db';
import { addSimChannel, eventually, jsonOf, makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import OpenAI from 'openai';
import { startSim, type Sim } from '../../../../upstream-sim/src';
import { publishKeyInvalidations } from '@gensvc/queue';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let secret: string;
let limited: string;
let workspaceId: string;
let limitedKeyId: string;

const CHAT = 'sim/chat-1';
const JUDGE = 'sim/judge';
const IMAGE = 'sim/image-1';
/** Paging fodder: 23 more chat models, made a minute apart (newest last made). */
const MANY = Array.from({ length: 23 }, (_, i) => `sim/p-${String(i).padStart(2, '0')}`);
const USABLE = [CHAT, JUDGE, IMAGE, ...MANY].sort();

beforeAll(async () => {
  sim = await startSim();
  const channel = (name: string, kind: ChannelKind, weight = 1) =>
    addSimChannel(ctx.db, sim.url, { name, kind, weight });
  const [oa, an, gm, ev, rp, off, idle] = await Promise.all([
    channel('oa', 'openai'),
    channel('an', 'anthropic'),
    channel('gm', 'gemini'),
    channel('ev', 'evaluate'),
    channel('rp', 'replicate'),
    channel('off', 'openai'),
    channel('idle', 'openai', 0),
  ]);
  await channelRepository.update(ctx.db, ctx.secrets, off.id, { enabled: false });
  const prices = { inputPricePerMTok: 2_500_000n, outputPricePerMTok: 10_000_000n };
  await modelRepository.create(ctx.db, {
    id: CHAT,
    kind: 'chat',
    ...prices,
    maxOutputTokens: 8192,
    routes: [oa, an, gm].map((c) => ({ channelId: c.id })),
  });
  await modelRepository.create(ctx.db, {
    id: JUDGE,
    kind: 'evaluation',
    inputPricePerMTok: 1_000_000n,
    inputOnly: true,
    routes: [{ channelId: ev.id }],
  });
  await modelRepository.create(ctx.db, {
    id: IMAGE,
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: rp.id }, { channelId: oa.id }],
  });
  // Not usable: disabled; only a disabled channel; only a channel of weight 0; no channel at all.
  await modelRepository.create(ctx.db, { id: 'sim/disabled', kind: 'chat', ...prices, routes: [{ channelId: oa.id }] });
  await modelRepository.update(ctx.db, 'sim/disabled', { enabled: false });
  await modelRepository.create(ctx.db, { id: 'sim/orphan', kind: 'chat', ...prices, routes: [{ channelId: off.id }] });
  await modelRepository.create(ctx.db, { id: 'sim/idle', kind: 'chat', ...prices, routes: [{ channelId: idle.id }] });
  await modelRepository.create(ctx.db, { id: 'sim/none', kind: 'chat', ...prices });
  const base = Date.parse('2026-01-01T00:00:00Z');
  for (const [i, id] of MANY.entries()) {
    await modelRepository.create(ctx.db, { id, kind: 'chat', ...prices, routes: [{ channelId: oa.id }] });
    await ctx.db.model.update({ where: { id }, data: { createdAt: new Date(base + i * 60_000) } });
  }
  for (const id of [CHAT, JUDGE, IMAGE])
    await ctx.db.model.update({ where: { id }, data: { createdAt: new Date(base - 86_400_000) } });
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id)).secret;
  const made = await makeKey(ctx.db, ws.id, { allowedModels: [CHAT, JUDGE, 'sim/disabled'] });
  limited = made.secret;
  limitedKeyId = made.key.id;
  edge = await startEdge(ctx);
});

afterAll(async () => {
  await edge?.close();
  await sim?.close();
});

const openai = (key = secret, base = '/v1') =>
  new OpenAI({ apiKey: key, baseURL: `${edge.url}${base}`, maxRetries: 0 });
const anthropic = (key = secret) => new Anthropic({ apiKey: key, baseURL: edge.url, maxRetries: 0 });
const google = (key = secret) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: edge.url } });
const get = (path: string, headers: Record<string, string> = {}) => fetch(`${edge.url}${path}`, { headers });

describe('OpenAI shape', () => {
  it('lists every usable model once, with gensvc prices in the workspace currency, on both paths', async () => {
    const listed = [];
    for await (const m of openai().models.list()) listed.push(m);
    expect(listed.map((m) => m.id).sort()).toEqual(USABLE);
    const chat = listed.find((m) => m.id === CHAT)!;
    expect(chat).toEqual({
      id: CHAT,
      object: 'model',
      created: Date.parse('2025-12-31T00:00:00Z') / 1000,
      owned_by: 'sim',
      gensvc: {
        kind: 'chat',
        currency: 'USD',
        prices: { input_per_million_tokens: 2.5, output_per_million_tokens: 10, per_unit: 0 },
        input_only: false,
        max_output_tokens: 8192,
        protocols: ['anthropic', 'gemini', 'openai'],
      },
    });
    expect(listed.find((m) => m.id === IMAGE)).toMatchObject({
      gensvc: { kind: 'image', prices: { per_unit: 0.04 }, protocols: ['openai', 'replicate'] },
    });
    expect(listed.find((m) => m.id === JUDGE)).toMatchObject({ gensvc: { kind: 'evaluation', input_only: true } });

    const res = await get('/api/v1/models', { authorization: `Bearer ${secret}` });
    expect(res.status).toBe(200);
    const body = (await jsonOf(res)) as { object: string; data: { id: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id)).toEqual(USABLE);
  });

  it('retrieves one model (slash in its id, encoded or not); unknown or unusable is 404 model_not_found', async () => {
    const m = await openai().models.retrieve(CHAT);
    expect(m).toMatchObject({ id: CHAT, object: 'model', owned_by: 'sim' });
    const plain = await get(`/v1/models/${CHAT}`, { authorization: `Bearer ${secret}` });
    expect(((await jsonOf(plain)) as { id: string }).id).toBe(CHAT);
    for (const id of ['sim/nope', 'sim/disabled', 'sim/orphan', 'sim/idle', 'sim/none']) {
      const err = await openai()
        .models.retrieve(id)
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error).toEqual({
        type: 'not_found_error',
        code: 'model_not_found',
        message: expect.stringContaining(id),
        param: 'model',
        request_id: expect.any(String),
      });
    }
    const anon = await get('/v1/models');
    expect(anon.status).toBe(401);
    expect(await jsonOf(anon)).toMatchObject({ error: { code: 'missing_api_key' } });
  });
});

describe('Anthropic shape (anthropic-version sent)', () => {
  it('pages newest first with limit/after_id, and the SDK auto-pages through all of them', async () => {
    const order = [...MANY].reverse().concat([CHAT, IMAGE, JUDGE].sort());
    const first = await anthropic().models.list({ limit: 5 });
    expect(first.data.map((m) => m.id)).toEqual(order.slice(0, 5));
    expect(first.has_more).toBe(true);
    expect(first.first_id).toBe(order[0]);
    expect(first.last_id).toBe(order[4]);
    expect(first.data[0]).toEqual({
      type: 'model',
      id: order[0],
      display_name: order[0],
      created_at: '2026-01-01T00:22:00.000Z',
      gensvc: expect.objectContaining({ kind: 'chat', currency: 'USD' }),
    });

    const all: string[] = [];
    let pages = 0;
    for await (const page of (await anthropic().models.list({ limit: 7 })).iterPages()) {
      pages++;
      all.push(...page.data.map((m) => m.id));
    }
    expect(pages).toBe(4); // 26 models, 7 a page
    expect(all).toEqual(order);
    const auto: string[] = [];
    for await (const m of anthropic().models.list({ limit: 4 })) auto.push(m.id);
    expect(auto).toEqual(order);
  });

  it('pages backwards with before_id, and retrieves one model', async () => {
    const order = [...MANY].reverse().concat([CHAT, IMAGE, JUDGE].sort());
    const res = await get(`/v1/models?limit=3&before_id=${encodeURIComponent(order[10]!)}`, {
      'x-api-key': secret,
      'anthropic-version': '2023-06-01',
    });
    const body = (await jsonOf(res)) as {
      data: { id: string }[];
      has_more: boolean;
      first_id: string;
      last_id: string;
    };
    expect(body.data.map((m) => m.id)).toEqual(order.slice(7, 10));
    expect(body).toMatchObject({ has_more: true, first_id: order[7], last_id: order[9] });
    const start = (await jsonOf(
      await get(`/v1/models?limit=5&before_id=${encodeURIComponent(order[3]!)}`, {
        'x-api-key': secret,
        'anthropic-version': '2023-06-01',
      }),
    )) as { data: { id: string }[]; has_more: boolean };
    expect(start.data.map((m) => m.id)).toEqual(order.slice(0, 3));
    expect(start.has_more).toBe(false);

    const one = await anthropic().models.retrieve(JUDGE);
    expect(one).toMatchObject({ type: 'model', id: JUDGE, display_name: JUDGE });
  });

  it("answers errors in Anthropic's shape", async () => {
    const bad = await anthropic('gsk_wrong')
      .models.list()
      .catch((e) => e);
    expect(bad).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(bad.error).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    const missing = await anthropic()
      .models.retrieve('sim/disabled')
      .catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining('sim/disabled') },
    });
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['after_id=sim%2Fnope', 'after_id'],
      ['after_id=sim%2Fchat-1&before_id=sim%2Fjudge', 'before_id'],
    ] as const) {
      const res = await get(`/v1/models?${query}`, { 'x-api-key': secret, 'anthropic-version': '2023-06-01' });
      expect(res.status).toBe(400);
      expect(await jsonOf(res)).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining(param) },
      });
    }
  });
});

describe('Google shape', () => {
  it('lists through the SDK pager, supportedGenerationMethods only where a Gemini channel serves it', async () => {
    const names: string[] = [];
    const pager = await google().models.list({ config: { pageSize: 10 } });
    for await (const m of pager) names.push(m.name!);
    expect(names).toEqual(USABLE.map((id) => `models/${id}`));
    const res = await get('/v1beta/models?pageSize=2', { 'x-goog-api-key': secret });
    const page = (await jsonOf(res)) as { models: Record<string, unknown>[]; nextPageToken: string };
    expect(page.models).toHaveLength(2);
    expect(page.models[0]).toEqual({
      name: `models/${CHAT}`,
      baseModelId: CHAT,
      version: '1',
      displayName: CHAT,
      description: 'chat model served by gensvc',
      outputTokenLimit: 8192,
      supportedGenerationMethods: ['generateContent', 'streamGenerateContent'],
      gensvc: expect.objectContaining({ kind: 'chat' }),
    });
    expect(page.models[1]).toMatchObject({ name: `models/${IMAGE}`, supportedGenerationMethods: [] });
    const next = (await jsonOf(
      await get(`/v1beta/models?pageSize=2&pageToken=${page.nextPageToken}&key=${secret}`),
    )) as { models: { name: string }[] };
    expect(next.models.map((m) => m.name)).toEqual([`models/${JUDGE}`, `models/${MANY[0]}`]);
    const last = (await jsonOf(
      await get('/v1beta/models?pageSize=1000', { authorization: `Bearer ${secret}` }),
    )) as Record<string, unknown>;
    expect(last.nextPageToken).toBeUndefined();
  });

  it("gets one model, and answers errors in Google's shape", async () => {
    const one = await google().models.get({ model: CHAT });
    expect(one).toMatchObject({
      name: `models/${CHAT}`,
      outputTokenLimit: 8192,
      supportedActions: ['generateContent', 'streamGenerateContent'],
    });
    const missing = await get('/v1beta/models/sim/orphan', { 'x-goog-api-key': secret });
    expect(missing.status).toBe(404);
    expect(await jsonOf(missing)).toEqual({
      error: { code: 404, message: expect.stringContaining('sim/orphan'), status: 'NOT_FOUND' },
    });
    const bad = await get('/v1beta/models?pageSize=0', { 'x-goog-api-key': secret });
    expect(await jsonOf(bad)).toEqual({
      error: { code: 400, message: expect.stringContaining('pageSize'), status: 'INVALID_ARGUMENT' },
    });
    const token = await get('/v1beta/models?pageToken=%3D%3D', { 'x-goog-api-key': secret });
    expect(token.status).toBe(400);
    const anon = await get('/v1beta/models');
    expect(await jsonOf(anon)).toEqual({
      error: { code: 401, message: expect.any(String), status: 'UNAUTHENTICATED' },
    });
  });
});

describe('a key limited to some models', () => {
  it('sees only its usable models in every list, and 404 for the others', async () => {
    const ids = [];
    for await (const m of openai(limited).models.list()) ids.push(m.id);
    expect(ids).toEqual([CHAT, JUDGE]); // sim/disabled is allowed but not usable
    const anthropicIds = [];
    for await (const m of anthropic(limited).models.list()) anthropicIds.push(m.id);
    expect(anthropicIds).toEqual([CHAT, JUDGE]);
    const googleNames = [];
    for await (const m of await google(limited).models.list()) googleNames.push(m.name);
    expect(googleNames).toEqual([`models/${CHAT}`, `models/${JUDGE}`]);
    expect(
      await openai(limited)
        .models.retrieve(IMAGE)
        .catch((e) => e.status),
    ).toBe(404);
    expect(
      await anthropic(limited)
        .models.retrieve(MANY[0]!)
        .catch((e) => e.status),
    ).toBe(404);
    expect((await get(`/v1beta/models/${IMAGE}`, { 'x-goog-api-key': limited })).status).toBe(404);
  });

  it('is refused other models with 403 model_not_allowed on every paid route, before any hold', async () => {
    const other = MANY[0]!;
    const bearer = { authorization: `Bearer ${limited}`, 'content-type': 'application/json' };
    const post = (path: string, body: unknown, headers: Record<string, string> = bearer) =>
      fetch(`${edge.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const messages = [{ role: 'user', content: 'hi' }];
    const native = [
      await post('/api/v1/evaluate', {
        model: other,
        state: 's',
        questions: { q: { type: 'boolean', instructions: 'ok?' } },
      }),
      await post('/api/v1/chat/completions', { model: other, messages }),
      await post('/v1/chat/completions', { model: IMAGE, messages }),
      await post('/v1/responses', { model: other, input: 'hi' }),
      await post('/v1/images/edits', { model: IMAGE, prompt: 'p', image_url: 'https://example.com/a.png' }),
      await post('/api/v1/sim/text-to-image', { model: IMAGE, prompt: 'a lighthouse' }),
      await post('/api/v1/sim/text-to-video', { model: 'sim/unknown-video', prompt: 'waves', duration_seconds: 4 }),
    ];
    for (const res of native) {
      expect(res.status).toBe(403);
      expect(await jsonOf(res)).toEqual({
        error: {
          type: 'permission_error',
          code: 'model_not_allowed',
          message: expect.stringMatching(/may not use the model "sim\//),
          param: 'model',
          request_id: expect.any(String),
        },
      });
    }
    const sdk = await openai(limited)
      .chat.completions.create({ model: other, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(sdk).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(sdk.code).toBe('model_not_allowed');

    const claude = await anthropic(limited)
      .messages.create({ model: other, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(claude).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(claude.error).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: expect.stringContaining(other) },
    });

    const gemini = await post(
      `/v1beta/models/${other}:generateContent`,
      { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
      { 'x-goog-api-key': limited, 'content-type': 'application/json' },
    );
    expect(gemini.status).toBe(403);
    expect(await jsonOf(gemini)).toEqual({
      error: { code: 403, message: expect.stringContaining(other), status: 'PERMISSION_DENIED' },
    });

    // Nothing held, charged or queued for any of them, and no provider called.
    expect(await ctx.db.reservation.count({ where: { apiKeyId: limitedKeyId } })).toBe(0);
    expect(await ctx.db.task.count({ where: { workspaceId } })).toBe(0);
    expect(sim.requests()).toEqual([]);
  });

  it('calls the models it is allowed as before', async () => {
    const answer = await openai(limited).chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.model).toBe(CHAT);
    expect(sim.requests().map((r) => r.model)).toEqual(['chat-1']);
    // The call shows in the usage API as the ledger has it.
    await edge.deps.holds.leases.flushed();
    const [entry] = await ctx.db.ledgerEntry.findMany({ where: { apiKeyId: limitedKeyId } });
    const res = await get(`/api/v1/usage?group_by=model&key_id=${limitedKeyId}`, {
      authorization: `Bearer ${limited}`,
    });
    expect(await jsonOf(res)).toMatchObject({
      currency: 'USD',
      data: [
        {
          model: CHAT,
          calls: 1,
          input_tokens: entry!.inputTokens,
          output_tokens: entry!.outputTokens,
          images: 0,
          video_seconds: 0,
          cost: -Number(entry!.amount) / 1e6,
        },
      ],
    });
    expect(answer.usage).toMatchObject({ prompt_tokens: entry!.inputTokens, completion_tokens: entry!.outputTokens });
  });
});

it("a change of a key's limits reaches the edge with its invalidation (its cached look-up holds them)", async () => {
  const { key, secret: changing } = await makeKey(ctx.db, workspaceId);
  const ids = async () => (await openai(changing).models.list()).data.map((m) => m.id);
  expect(await ids()).toEqual(USABLE);
  await apiKeyRepository.setLimits(ctx.db, key.id, { allowedModels: [JUDGE] });
  // Cached: without the invalidation the edge still answers from the look-up it holds.
  expect(await ids()).toEqual(USABLE);
  await publishKeyInvalidations(ctx.redis, ctx.config.queuePrefix, [key.id], (err) => {
    throw err;
  });
  await eventually(async () => ((await ids()).join() === JUDGE ? true : undefined), 'the narrowed list', 2_000);
  expect(edge.deps.keyCache.size).toBeGreaterThan(0);
});
