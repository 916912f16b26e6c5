// The Responses route end to end: the official openai SDK talks to a real edge (real Postgres, Redis, S3), which
// proxies to the upstream-sim over real sockets. The sim's answer lists the sha256 of every image it received, so
// the tests prove which bytes reached the provider; every call's money is checked against the ledger.
import { Readable } from 'node:stream';
import { fileRepository, modelRepository, newId } from '@gensvc/db';
import { fileObjectKey, putObjectStream } from '@gensvc/storage';
import { addSimChannel, jsonOf, makeKey, makeWorkspace, sampleMedia, useTestContext } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';
import OpenAI from 'openai';
import { chatReply, sha256Hex, sniffImageType, startSim, tokensOf, type Sim } from '../../../../upstream-sim/src';
import {
  expectBalanced,
  expectCharged,
  expectHoldOf,
  expectReleased,
  statusOf,
  type Usage,
} from '../../billing-test-support';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { upload } from '../files/files-test-support';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let secret: string;
let workspaceId: string;
let otherSecret: string;

const PRICES = {
  inputPricePerMTok: 2_000_000n,
  outputPricePerMTok: 8_000_000n,
  inputOnly: false,
  maxOutputTokens: 4096,
};
const CHAT = 'sim/chat-1';

beforeAll(async () => {
  sim = await startSim();
  const [oaA, oaB, an] = await Promise.all([
    addSimChannel(ctx.db, sim.url, { name: 'oa-a', kind: 'openai', priority: 2 }),
    addSimChannel(ctx.db, sim.url, { name: 'oa-b', kind: 'openai', priority: 1 }),
    addSimChannel(ctx.db, sim.url, { name: 'an', kind: 'anthropic' }),
  ]);
  await modelRepository.create(ctx.db, {
    id: CHAT,
    kind: 'chat',
    ...PRICES,
    routes: [oaA, oaB].map((c) => ({ channelId: c.id })),
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/claude-only',
    kind: 'chat',
    ...PRICES,
    routes: [{ channelId: an.id }],
  });
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  workspaceId = ws.id;
  secret = (await makeKey(ctx.db, ws.id)).secret;
  const other = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  otherSecret = (await makeKey(ctx.db, other.id)).secret;
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
const post = (body: unknown, key = secret) =>
  fetch(`${edge.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const dataUrl = (bytes: Buffer) => `data:${sniffImageType(bytes)};base64,${bytes.toString('base64')}`;

/** A file of `workspace`, its row made as an upload makes it and its bytes put in S3 (or not, with `bytes: false`). */
async function storedFile(workspace: string, contentType: string, bytes: Buffer | { size: number }) {
  const id = newId('file');
  const key = fileObjectKey(workspace, id);
  const size = Buffer.isBuffer(bytes) ? bytes.length : bytes.size;
  if (Buffer.isBuffer(bytes))
    await putObjectStream(ctx.s3, { bucket: ctx.config.s3.bucket, key, body: Readable.from([bytes]), contentType });
  await fileRepository.create(ctx.db, {
    id,
    workspaceId: workspace,
    source: 'upload',
    purpose: 'vision',
    filename: 'stored.bin',
    contentType,
    bytes: BigInt(size),
    storageKey: key,
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  return id;
}

async function uploaded(bytes: Buffer, key = secret, filename = 'pic.png'): Promise<string> {
  const res = await upload(edge.url, key, bytes, { filename });
  expect(res.status).toBe(200);
  return (await jsonOf(res)).id;
}

/**
 * What the sim answers to `input` as the provider received it (file ids already replaced by data URLs): its reply
 * to {instructions, input}, one line per image with the sha256 of its bytes, and the usage it reports.
 */
function expectedAnswer(
  input: unknown,
  images: Buffer[],
  opts: { instructions?: string; maxOutputTokens?: number } = {},
) {
  const conversation = { instructions: opts.instructions, input };
  const reply = chatReply(conversation, opts.maxOutputTokens ?? PRICES.maxOutputTokens);
  const lines = images.map(
    (b, i) => `\ninput_image[${i}] sha256=${sha256Hex(b)} bytes=${b.length} type=${sniffImageType(b)}`,
  );
  return {
    text: reply.text + lines.join(''),
    usage: { inputTokens: tokensOf(conversation), outputTokens: reply.outputTokens + lines.length },
  };
}

/** One settled charge of `usage` at CHAT's prices, to this file's workspace. */
const charged = (requestId: string | null, usage: Usage) =>
  expectCharged(ctx.db, requestId, { workspaceId, model: CHAT, prices: PRICES, usage }, edge.deps.holds.leases);

/** Nothing reached the provider and nothing was held for the request. */
async function expectNoCall(res: Response) {
  expect(sim.requests()).toEqual([]);
  expect(await ctx.db.reservation.count({ where: { requestId: res.headers.get('x-request-id')! } })).toBe(0);
}

const imageInput = (fileId: string, text = 'What is in this picture?') => [
  {
    role: 'user' as const,
    content: [
      { type: 'input_text' as const, text },
      { type: 'input_image' as const, file_id: fileId, detail: 'auto' as const },
    ],
  },
];
/** imageInput as the provider must receive it: the file_id replaced by the file's bytes. */
const imageInputSent = (bytes: Buffer, text = 'What is in this picture?') => [
  {
    role: 'user',
    content: [
      { type: 'input_text', text },
      { type: 'input_image', detail: 'auto', image_url: dataUrl(bytes) },
    ],
  },
];

describe('POST /v1/responses with input_image file_id', () => {
  const png = sampleMedia.png(48, 32);

  it("sends an uploaded file's bytes to the provider, on both paths, and charges the reported usage once", async () => {
    const fileId = await uploaded(png);
    const expected = expectedAnswer(imageInputSent(png), [png]);
    for (const base of ['/v1', '/api/v1']) {
      const { data, response } = await openai(secret, base)
        .responses.create({ model: CHAT, input: imageInput(fileId) })
        .withResponse();
      expect(data.object).toBe('response');
      expect(data.model).toBe(CHAT);
      expect(data.output_text).toBe(expected.text);
      expect(data.output_text).toContain(`sha256=${sha256Hex(png)} bytes=${png.length} type=image/png`);
      expect(data.usage).toMatchObject({
        input_tokens: expected.usage.inputTokens,
        output_tokens: expected.usage.outputTokens,
      });
      expect(response.headers.get('x-ratelimit-limit-rpm')).toBe('300');
      expect(Number(response.headers.get('x-ratelimit-remaining-rpm'))).toBeLessThan(300);
      expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
      await charged(response.headers.get('x-request-id'), expected.usage);
    }
    // The provider got its own credential and model name over the Responses protocol.
    expect(sim.requests().map((r) => [r.channel, r.protocol, r.path, r.model, r.status])).toEqual([
      ['oa-a', 'openai-responses', '/v1/responses', 'chat-1', 200],
      ['oa-a', 'openai-responses', '/v1/responses', 'chat-1', 200],
    ]);
    await expectBalanced(ctx.db, workspaceId);
    // The hold covered the body the provider got (the image inlined) and the model's output cap.
    const sentBytes = Buffer.byteLength(
      JSON.stringify({ model: 'chat-1', input: imageInputSent(png), max_output_tokens: PRICES.maxOutputTokens }),
    );
    await expectHoldOf(
      ctx.db,
      workspaceId,
      costOf(PRICES, { inputTokens: sentBytes, outputTokens: PRICES.maxOutputTokens }),
      (key) => statusOf(openai(key).responses.create({ model: CHAT, input: imageInput(fileId) })),
    );
  });

  it('streams the response events with the model renamed, and charges the usage of response.completed', async () => {
    const fileId = await uploaded(png);
    const expected = expectedAnswer(imageInputSent(png), [png]);
    const { data: stream, response } = await openai()
      .responses.create({ model: CHAT, input: imageInput(fileId), stream: true })
      .withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.created') expect(event.response.model).toBe(CHAT);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(text).toBe(expected.text);
    expect(completed!.model).toBe(CHAT);
    expect(completed!.usage).toMatchObject({
      input_tokens: expected.usage.inputTokens,
      output_tokens: expected.usage.outputTokens,
    });
    await charged(response.headers.get('x-request-id'), expected.usage);
  });

  it('inlines each named file in place (twice if named twice) by data URLs; honours max_output_tokens', async () => {
    const jpeg = sampleMedia.jpeg(40, 24);
    const gif = sampleMedia.gif(16, 16);
    const jpegId = await storedFile(workspaceId, 'image/jpeg', jpeg);
    const input = [
      {
        role: 'user' as const,
        content: [
          { type: 'input_image' as const, file_id: jpegId, detail: 'low' as const },
          { type: 'input_text' as const, text: 'and' },
        ],
      },
      {
        role: 'user' as const,
        content: [
          { type: 'input_image' as const, image_url: dataUrl(gif), detail: 'high' as const },
          { type: 'input_image' as const, file_id: jpegId, detail: 'auto' as const },
        ],
      },
    ];
    const sent = [
      {
        role: 'user',
        content: [
          { type: 'input_image', detail: 'low', image_url: dataUrl(jpeg) },
          { type: 'input_text', text: 'and' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'input_image', image_url: dataUrl(gif), detail: 'high' },
          { type: 'input_image', detail: 'auto', image_url: dataUrl(jpeg) },
        ],
      },
    ];
    const expected = expectedAnswer(sent, [jpeg, gif, jpeg], { instructions: 'Be exact.', maxOutputTokens: 5 });
    const { data, response } = await openai()
      .responses.create({ model: CHAT, input, instructions: 'Be exact.', max_output_tokens: 5 })
      .withResponse();
    expect(data.output_text).toBe(expected.text);
    expect(data.status).toBe('incomplete');
    await charged(response.headers.get('x-request-id'), expected.usage);
    const sentBytes = Buffer.byteLength(
      JSON.stringify({ model: 'chat-1', input: sent, instructions: 'Be exact.', max_output_tokens: 5 }),
    );
    await expectHoldOf(ctx.db, workspaceId, costOf(PRICES, { inputTokens: sentBytes, outputTokens: 5 }), (key) =>
      statusOf(openai(key).responses.create({ model: CHAT, input, instructions: 'Be exact.', max_output_tokens: 5 })),
    );
  });

  it('answers a foreign, missing or malformed file id 404 file_not_found naming the item, calls nothing', async () => {
    const foreign = await uploaded(png, otherSecret);
    for (const fileId of [foreign, newId('file'), 'file-abc123']) {
      const res = await post({ model: CHAT, input: imageInput(fileId) });
      expect(res.status).toBe(404);
      const body = await jsonOf(res);
      expect(body.error).toMatchObject({
        type: 'not_found_error',
        code: 'file_not_found',
        param: 'input[0].content[1].file_id',
      });
      expect(body.error.message).toContain(fileId);
      await expectNoCall(res);
    }
    // Through the SDK it is a NotFoundError; in a later item the path says which one.
    const mine = await uploaded(png);
    const err = await openai()
      .responses.create({
        model: CHAT,
        input: [
          ...imageInput(mine),
          { role: 'user', content: [{ type: 'input_image', file_id: foreign, detail: 'auto' }] },
        ],
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.error).toMatchObject({ code: 'file_not_found', param: 'input[1].content[0].file_id' });
    expect(sim.requests()).toEqual([]);
    // The owner may use it.
    const own = await openai(otherSecret).responses.create({ model: CHAT, input: imageInput(foreign) });
    expect(own.output_text).toContain(`sha256=${sha256Hex(png)}`);
  });

  it('answers a non-image 400 invalid_image, over 30 MB 400 media_limit_exceeded, before reading bytes', async () => {
    const pdf = await uploaded(sampleMedia.pdf(), secret, 'doc.pdf');
    const notImage = await post({ model: CHAT, input: imageInput(pdf) });
    expect(notImage.status).toBe(400);
    expect((await jsonOf(notImage)).error).toMatchObject({
      code: 'invalid_image',
      param: 'input[0].content[1].file_id',
      message: expect.stringContaining('application/pdf'),
    });
    await expectNoCall(notImage);
    // Rows only, no bytes in S3: reading them would answer 404, so these answers come from the rows.
    const huge = await storedFile(workspaceId, 'image/png', { size: 30_000_001 });
    const tooBig = await post({ model: CHAT, input: imageInput(huge) });
    expect(tooBig.status).toBe(400);
    expect((await jsonOf(tooBig)).error).toMatchObject({
      code: 'media_limit_exceeded',
      param: 'input[0].content[1].file_id',
    });
    await expectNoCall(tooBig);
  });

  it("answers 413 when the inlined files would take the provider's body past 50 MiB", async () => {
    const a = await storedFile(workspaceId, 'image/png', { size: 20_000_000 });
    const b = await storedFile(workspaceId, 'image/jpeg', { size: 20_000_000 });
    const res = await post({ model: CHAT, input: [...imageInput(a), ...imageInput(b)] });
    expect(res.status).toBe(413);
    expect((await jsonOf(res)).error).toMatchObject({
      code: 'payload_too_large',
      param: 'input',
      message: expect.stringMatching(/50 MiB/),
    });
    await expectNoCall(res);
  });

  it('answers 404 for a file whose bytes are gone (being deleted), and checks the bytes are an image', async () => {
    const gone = await storedFile(workspaceId, 'image/png', { size: 100 });
    const res = await post({ model: CHAT, input: imageInput(gone) });
    expect(res.status).toBe(404);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'file_not_found', param: 'input[0].content[1].file_id' });
    await expectNoCall(res);
    const liar = await storedFile(workspaceId, 'image/png', Buffer.from('these bytes are not a PNG at all'));
    const bad = await post({ model: CHAT, input: imageInput(liar) });
    expect(bad.status).toBe(400);
    expect((await jsonOf(bad)).error).toMatchObject({ code: 'invalid_image', param: 'input[0].content[1].file_id' });
    await expectNoCall(bad);
  });
});

describe('POST /v1/responses', () => {
  const input = 'Say something deterministic.';
  const expected = expectedAnswer(input, []);

  it('rejects what it cannot serve with 400 naming the field, before calling upstream', async () => {
    const fileId = await uploaded(sampleMedia.png(8, 8));
    const cases: Array<[unknown, string, string]> = [
      [
        {
          model: CHAT,
          input: [
            {
              role: 'user',
              content: [{ type: 'input_image', file_id: fileId, image_url: 'https://example.com/a.png' }],
            },
          ],
        },
        'invalid_request',
        'input[0].content[0].file_id',
      ],
      [
        { model: CHAT, input: [{ role: 'user', content: [{ type: 'input_image', file_id: 42 }] }] },
        'invalid_request',
        'input[0].content[0].file_id',
      ],
      [
        { model: CHAT, input: [{ role: 'user', content: [{ type: 'input_file', file_id: fileId }] }] },
        'invalid_request',
        'input[0].content[0].file_id',
      ],
      [{ model: CHAT, input, background: true }, 'invalid_request', 'background'],
      [{ model: CHAT, input: 42 }, 'invalid_request', 'input'],
      [{ model: CHAT, input, max_output_tokens: 0 }, 'invalid_request', 'max_output_tokens'],
      [{ input }, 'invalid_request', 'model'],
      [{ model: 'sim/claude-only', input }, 'model_not_supported', 'model'],
    ];
    for (const [body, code, param] of cases) {
      const res = await post(body);
      expect([res.status, await jsonOf(res).then((b) => b.error)]).toEqual([
        400,
        expect.objectContaining({ code, param }),
      ]);
      await expectNoCall(res);
    }
    const unknown = await openai()
      .responses.create({ model: 'sim/nope', input })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('requires the llm.chat scope', async () => {
    const { secret: filesOnly } = await makeKey(ctx.db, workspaceId, { scopes: ['files.write'] });
    const err = await openai(filesOnly)
      .responses.create({ model: CHAT, input })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.error).toMatchObject({ code: 'insufficient_scope', param: 'llm.chat' });
    expect(sim.requests()).toEqual([]);
  });

  it('answers 402 when the key cap cannot hold the call, and charges nothing', async () => {
    const capped = await makeKey(ctx.db, workspaceId, { spendCap: 5n });
    const fileId = await uploaded(sampleMedia.png(8, 8));
    const err = await openai(capped.secret)
      .responses.create({ model: CHAT, input })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ type: 'billing_error', code: 'spending_cap_exhausted' });
    // Held before calling now (the key was refused recently), with a file inlined, streaming.
    const seen = sim.requests().length;
    const again = await post({ model: CHAT, input: imageInput(fileId), stream: true }, capped.secret);
    expect(again.status).toBe(402);
    expect((await jsonOf(again)).error).toMatchObject({ code: 'spending_cap_exhausted' });
    expect(sim.requests()).toHaveLength(seen);
    expect(await ctx.db.reservation.count({ where: { apiKeyId: capped.key.id } })).toBe(0);
    expect(await ctx.db.ledgerEntry.count({ where: { apiKeyId: capped.key.id } })).toBe(0);
    await expectBalanced(ctx.db, workspaceId);
  });

  it('fails over to the next channel on a 500 before the first byte, streaming or not', async () => {
    sim.faults.add({ channel: 'oa-a', status: 500, times: 2 });
    const { data, response } = await openai().responses.create({ model: CHAT, input }).withResponse();
    expect(data.output_text).toBe(expected.text);
    await charged(response.headers.get('x-request-id'), expected.usage);
    const streamed = await openai().responses.create({ model: CHAT, input, stream: true }).withResponse();
    let text = '';
    for await (const event of streamed.data) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).toBe(expected.text);
    await charged(streamed.response.headers.get('x-request-id'), expected.usage);
    expect(sim.requests().map((r) => [r.channel, r.status])).toEqual([
      ['oa-a', 500],
      ['oa-b', 200],
      ['oa-a', 500],
      ['oa-b', 200],
    ]);
  });

  it('fails over on an answer that is not a response object', async () => {
    sim.faults.add({ channel: 'oa-a', malformed: 'shape', times: 1 });
    const { data, response } = await openai().responses.create({ model: CHAT, input }).withResponse();
    expect(data.output_text).toBe(expected.text);
    expect(sim.requests().map((r) => r.channel)).toEqual(['oa-a', 'oa-b']);
    await charged(response.headers.get('x-request-id'), expected.usage);
  });

  it('ends a cut stream with an error event the SDK throws, and releases the hold (no usage reported)', async () => {
    // created, in_progress, output_item.added, content_part.added, then two deltas.
    sim.faults.add({ channel: 'oa-a', cutAfterChunks: 6 });
    const { data: stream, response } = await openai()
      .responses.create({ model: CHAT, input, stream: true })
      .withResponse();
    let text = '';
    const err = await (async () => {
      for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String(err.message)).toMatch(/interrupted/);
    expect(text).toBe(chatReply({ input }).pieces.slice(0, 2).join(''));
    expect(sim.requests().map((r) => [r.channel, r.outcome])).toEqual([['oa-a', 'cut']]);
    await expectReleased(ctx.db, edge.deps.holds.leases, response.headers.get('x-request-id'));
    await expectBalanced(ctx.db, workspaceId);
  });

  it('replays a non-streamed answer for a repeated Idempotency-Key and charges once', async () => {
    const key = `idem-${Date.now()}`;
    const first = await openai()
      .responses.create({ model: CHAT, input }, { headers: { 'Idempotency-Key': key } })
      .withResponse();
    const again = await openai()
      .responses.create({ model: CHAT, input }, { headers: { 'Idempotency-Key': key } })
      .withResponse();
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.requests()).toHaveLength(1);
    await charged(first.response.headers.get('x-request-id'), expected.usage);
  });
});
