// POST /v1/responses with the image_generation tool, end to end: the official openai SDK against a real edge (real
// Postgres, Redis, S3) in front of the upstream-sim, which answers image_generation_call items with real PNG bytes
// made from the prompt and the guide image it received. Every image is checked byte for byte in the answer and in
// S3, and every call's money against the ledger: its tokens plus the model's price per image, held before the call.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { modelRepository } from '@gensvc/db';
import { addSimChannel, jsonOf, makeKey, makeWorkspace, sampleMedia, useTestContext } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';
import OpenAI from 'openai';
import { editedImagePng, startSim, type Sim } from '../../../../upstream-sim/src';
import { expectBalanced } from '../../billing-test-support';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { upload } from '../files/files-test-support';
import { imageUrlHosts, startImageUrlServer, type ImageUrlServer } from '../images/image-url-test-server';

const hosts = imageUrlHosts();
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: `${hosts.host}/32` });
let sim: Sim;
let edge: EdgeUnderTest;
let refs: ImageUrlServer;
let secret: string;
let otherSecret: string;
let workspaceId: string;

const PRICES = {
  inputPricePerMTok: 2_000_000n,
  outputPricePerMTok: 8_000_000n,
  inputOnly: false,
  maxOutputTokens: 4096,
};
const UNIT_PRICE = 40_000n;
const MODEL = 'sim/chat-img';
const UNPRICED = 'sim/chat-1';
const TOOL = { type: 'image_generation' as const, size: '256x256' as const };

beforeAll(async () => {
  sim = await startSim();
  refs = await startImageUrlServer(hosts);
  const [a, b] = await Promise.all([
    addSimChannel(ctx.db, sim.url, { name: 'oa-a', kind: 'openai', priority: 2 }),
    addSimChannel(ctx.db, sim.url, { name: 'oa-b', kind: 'openai', priority: 1 }),
  ]);
  const routes = [a, b].map((c) => ({ channelId: c.id, upstreamModel: 'gpt-4.1' }));
  await modelRepository.create(ctx.db, { id: MODEL, kind: 'chat', ...PRICES, unitPrice: UNIT_PRICE, routes });
  await modelRepository.create(ctx.db, { id: UNPRICED, kind: 'chat', ...PRICES, routes });
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id)).secret;
  otherSecret = (await makeKey(ctx.db, (await makeWorkspace(ctx.db, { balance: 10_000_000n })).id)).secret;
  edge = await startEdge(ctx, { outbound: { ca: refs.tls.caPem } });
});

afterAll(async () => {
  await edge?.close();
  await sim?.close();
  await refs?.close();
});

beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const openai = (key = secret) => new OpenAI({ apiKey: key, baseURL: `${edge.url}/v1`, maxRetries: 0 });
const dataUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`;
const guided = (text: string, image: { file_id: string } | { image_url: string }) => [
  {
    role: 'user' as const,
    content: [
      { type: 'input_text' as const, text },
      { type: 'input_image' as const, detail: 'auto' as const, ...image },
    ],
  },
];

type Item = Record<string, unknown> & {
  type: string;
  result?: string;
  svc_file_id?: string;
  svc_url?: string;
  archive_status?: string;
};

async function objectBytes(key: string): Promise<Buffer> {
  const out = await ctx.s3.send(new GetObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

/** The request's money: its one settled hold and its one ledger charge. */
async function moneyOf(requestId: string) {
  const [holds, entries] = await Promise.all([
    ctx.db.reservation.findMany({ where: { requestId } }),
    ctx.db.ledgerEntry.findMany({ where: { requestId } }),
  ]);
  return { holds, entries };
}

/** Nothing reached the provider and nothing was held, charged or recorded for the request. */
async function expectNothing(requestId: string) {
  expect(sim.requests()).toEqual([]);
  expect(await moneyOf(requestId)).toEqual({ holds: [], entries: [] });
  expect(await ctx.db.task.count({ where: { requestId } })).toBe(0);
}

/** Each generated image: the sim's PNG for (prompt, guide), archived in S3 byte for byte, its item naming its file. */
async function expectArchived(items: Item[], prompt: string, guide: Buffer, taskId: string) {
  const images = items.filter((i) => i.type === 'image_generation_call');
  for (const [index, item] of images.entries()) {
    const png = editedImagePng({ prompt, images: [guide], index, size: '256x256' });
    expect(Buffer.from(item.result!, 'base64').equals(png)).toBe(true);
    expect(item).toMatchObject({
      status: 'completed',
      archive_status: 'archived',
      svc_file_id: expect.stringMatching(/^file_/),
      svc_url: expect.stringMatching(/^http/),
    });
    const file = await ctx.db.file.findUniqueOrThrow({ where: { id: item.svc_file_id! } });
    expect(file).toMatchObject({
      workspaceId,
      source: 'generated',
      purpose: 'output',
      contentType: 'image/png',
      bytes: BigInt(png.length),
      taskId,
      outputIndex: index,
      archiveStatus: 'archived',
    });
    expect((await objectBytes(file.storageKey)).equals(png)).toBe(true);
  }
  return images.length;
}

describe('POST /v1/responses with the image_generation tool', () => {
  const guide = sampleMedia.png(48, 32);

  it('sends a workspace file as guide, archives the image, bills tokens + price × 1 held before the call', async () => {
    const upload1 = await upload(edge.url, secret, guide, { filename: 'guide.png' });
    const fileId = (await jsonOf(upload1)).id as string;
    const { data, response } = await openai()
      .responses.create({ model: MODEL, tools: [TOOL], input: guided('a lighthouse, in blue', { file_id: fileId }) })
      .withResponse();
    const requestId = response.headers.get('x-request-id')!;
    const items = data.output as unknown as Item[];
    expect(items.map((i) => i.type)).toEqual(['image_generation_call', 'message']);
    expect(data.model).toBe(MODEL);
    const body = data as unknown as { svc_task_id: string };
    expect(await expectArchived(items, 'a lighthouse, in blue', guide, body.svc_task_id)).toBe(1);
    // The guide reached the provider: its text line names the bytes received.
    expect(data.output_text).toContain(`input_image[0] sha256=`);

    const task = await ctx.db.task.findUniqueOrThrow({ where: { id: body.svc_task_id } });
    const usage = { inputTokens: data.usage!.input_tokens, outputTokens: data.usage!.output_tokens };
    const cost = costOf(PRICES, usage) + UNIT_PRICE;
    expect(task).toMatchObject({
      workspaceId,
      operation: 'responses.image_generation',
      status: 'completed',
      model: MODEL,
      cost,
      requestId,
    });
    expect(task.input).toMatchObject({
      tool: TOOL,
      max_tool_calls: 1,
      guides: [{ file_id: fileId }],
      images_generated: 1,
    });
    const { holds, entries } = await moneyOf(requestId);
    expect(holds).toHaveLength(1);
    expect(holds[0]!.state).toBe('settled');
    expect(entries.map((e) => [e.kind, e.amount, e.model, e.taskId, e.inputTokens, e.outputTokens])).toEqual([
      ['charge', -cost, MODEL, body.svc_task_id, usage.inputTokens, usage.outputTokens],
    ]);
    await expectBalanced(ctx.db, workspaceId);
    expect(sim.requests().map((r) => [r.channel, r.path, r.model, r.status])).toEqual([
      ['oa-a', '/v1/responses', 'gpt-4.1', 200],
    ]);
    // The task reads like any other: completed, its output the archived file.
    const view = await fetch(`${edge.url}/api/v1/tasks/${body.svc_task_id}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const envelope = await jsonOf(view);
    expect(view.status).toBe(200);
    expect(envelope).toMatchObject({
      task_id: body.svc_task_id,
      status: 'completed',
      operation: 'responses.image_generation',
      model: MODEL,
    });
    expect(JSON.stringify(envelope.output)).toContain(items[0]!.svc_file_id!);
  });

  it('holds exactly the token bound plus price × max_tool_calls, and charges each image generated', async () => {
    const input = guided('three cats', { image_url: dataUrl(guide) });
    // max_tool_calls is a create parameter of the Responses API the SDK's types do not list yet; the SDK sends it.
    const params = {
      model: MODEL,
      tools: [TOOL],
      input,
      max_tool_calls: 3,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const { data, response } = await openai().responses.create(params).withResponse();
    const requestId = response.headers.get('x-request-id')!;
    const body = data as unknown as { svc_task_id: string };
    expect(await expectArchived(data.output as unknown as Item[], 'three cats', guide, body.svc_task_id)).toBe(3);
    const usage = { inputTokens: data.usage!.input_tokens, outputTokens: data.usage!.output_tokens };
    const { holds, entries } = await moneyOf(requestId);
    // The body the provider got, byte for byte as the edge serialises it: the hold's input bound.
    const sent = Buffer.byteLength(
      JSON.stringify({
        model: 'gpt-4.1',
        tools: [TOOL],
        input,
        max_tool_calls: 3,
        max_output_tokens: PRICES.maxOutputTokens,
      }),
    );
    expect(holds.map((h) => h.amount)).toEqual([
      costOf(PRICES, { inputTokens: sent, outputTokens: PRICES.maxOutputTokens }) + 3n * UNIT_PRICE,
    ]);
    expect(entries.map((e) => e.amount)).toEqual([-(costOf(PRICES, usage) + 3n * UNIT_PRICE)]);
    await expectBalanced(ctx.db, workspaceId);
  });

  it('answers 402 without calling the provider when the hold (an image and tokens) exceeds the balance', async () => {
    const poor = await makeWorkspace(ctx.db, { balance: UNIT_PRICE });
    const key = (await makeKey(ctx.db, poor.id)).secret;
    const err = await openai(key)
      .responses.create({ model: MODEL, tools: [TOOL], input: 'a boat' })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'insufficient_balance' });
    expect(sim.requests()).toEqual([]);
    expect(await ctx.db.ledgerEntry.count({ where: { workspaceId: poor.id, kind: 'charge' } })).toBe(0);
  });

  it("answers another workspace's file and a missing one 404 file_not_found, before any hold or call", async () => {
    const theirs = (await jsonOf(await upload(edge.url, otherSecret, guide, { filename: 'theirs.png' }))).id as string;
    for (const fileId of [theirs, 'file_0000000000000000000000']) {
      const err = await openai()
        .responses.create({ model: MODEL, tools: [TOOL], input: guided('x', { file_id: fileId }) })
        .catch((e) => e);
      expect(err).toMatchObject({ status: 404, code: 'file_not_found', param: 'input[0].content[1].file_id' });
      await expectNothing(err.headers.get('x-request-id'));
    }
  });

  it.each<[string, string, string, string]>([
    ['plain http', `http://${hosts.host}/ok.png`, 'invalid_image_url', '[scheme]'],
    ['a private address', 'https://10.1.2.3/guide.png', 'invalid_image_url', '[private_address]'],
    ['a 9000 px wide image', `https://${hosts.host}/wide.png`, 'media_limit_exceeded', '[dimensions]'],
    ['a page that is not an image', `https://${hosts.host}/page.html`, 'invalid_image_url', '[type]'],
  ])('refuses a guide URL on %s: 400 naming the rule, nothing held or sent', async (_what, url, code, rule) => {
    const err = await openai()
      .responses.create({ model: MODEL, tools: [TOOL], input: guided('x', { image_url: url }) })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 400, code, param: 'input[0].content[1].image_url' });
    expect(err.message).toContain(rule);
    await expectNothing(err.headers.get('x-request-id'));
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['stream: true', { stream: true }, 'invalid_request', 'stream'],
    ['max_tool_calls above 8', { max_tool_calls: 9 }, 'invalid_request', 'max_tool_calls'],
    ['max_tool_calls 0', { max_tool_calls: 0 }, 'invalid_request', 'max_tool_calls'],
    ['a model with no per-image price', { model: UNPRICED }, 'model_not_supported', 'model'],
    ['the tool twice', { tools: [TOOL, TOOL] }, 'invalid_request', 'tools'],
  ])('refuses %s with 400, nothing held or sent', async (_what, extra, code, param) => {
    const res = await fetch(`${edge.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, tools: [TOOL], input: 'a boat', ...extra }),
    });
    const body = await jsonOf(res);
    expect({ status: res.status, code: body.error.code }).toEqual({ status: 400, code });
    if (code === 'invalid_request') expect(body.error.param).toBe(param);
    await expectNothing(res.headers.get('x-request-id')!);
  });

  it('fails over a failing channel; when all fail, answers 502, the hold released and nothing recorded', async () => {
    sim.faults.add({ channel: 'oa-a', status: 500, times: 1 });
    const ok = await openai()
      .responses.create({ model: MODEL, tools: [TOOL], input: 'a boat' })
      .withResponse();
    expect((ok.data.output as unknown as Item[])[0]!.archive_status).toBe('archived');
    expect(sim.requests().map((r) => [r.channel, r.status])).toEqual([
      ['oa-a', 500],
      ['oa-b', 200],
    ]);

    sim.resetRequests();
    sim.faults.add({ channel: 'oa-a', status: 500, times: 1 });
    sim.faults.add({ channel: 'oa-b', status: 503, times: 1 });
    const files = await ctx.db.file.count({ where: { workspaceId } });
    const err = await openai()
      .responses.create({ model: MODEL, tools: [TOOL], input: 'a boat' })
      .catch((e) => e);
    expect(err.status).toBe(502);
    const requestId = err.headers.get('x-request-id');
    const { holds, entries } = await moneyOf(requestId);
    expect(holds.map((h) => h.state)).toEqual(['released']);
    expect(entries).toEqual([]);
    expect(await ctx.db.task.count({ where: { requestId } })).toBe(0);
    expect(await ctx.db.file.count({ where: { workspaceId } })).toBe(files);
    await expectBalanced(ctx.db, workspaceId);
  });
});
