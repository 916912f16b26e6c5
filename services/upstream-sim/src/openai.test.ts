// The official openai SDK pointed at the sim works unchanged: chat (JSON and streamed with usage), images.edit
// and responses.create.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { jsonOf } from '@gensvc/testing';
import { chatReply, editedImagePng, pngInfo, sha256Hex, startSim, tokensOf, type Sim } from './index';

let sim: Sim;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSim();
  client = new OpenAI({ apiKey: 'sk-sim', baseURL: `${sim.url}/ch/openai-a/v1`, maxRetries: 0, timeout: 5_000 });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const messages = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'Name three rivers.' },
];

describe('chat completions', () => {
  it('answers a chat.completion whose text and usage follow from the messages', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    const expected = chatReply(messages);
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('gpt-4o-mini');
    expect(completion.choices[0]!.message).toMatchObject({ role: 'assistant', content: expected.text });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({
      prompt_tokens: tokensOf(messages),
      completion_tokens: expected.outputTokens,
      total_tokens: tokensOf(messages) + expected.outputTokens,
    });
    expect(expected.text).toMatch(/^sim reply to [0-9a-f]{8}: /);
    expect(sim.requests()).toMatchObject([
      { channel: 'openai-a', protocol: 'openai-chat', model: 'gpt-4o-mini', status: 200 },
    ]);
  });

  it('honours max_completion_tokens and max_tokens: never more completion tokens, finish_reason length', async () => {
    for (const limit of [{ max_tokens: 5 }, { max_completion_tokens: 2 }]) {
      const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, ...limit });
      const max = Object.values(limit)[0]!;
      expect(completion.usage!.completion_tokens).toBe(max);
      expect(completion.choices[0]!.finish_reason).toBe('length');
      expect(completion.choices[0]!.message.content).toBe(chatReply(messages, max).text);
    }
  });

  it('streams role, content deltas, finish_reason, then the usage chunk and [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const expected = chatReply(messages);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(expected.text);
    const finishing = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishing.map((c) => c.choices[0]!.finish_reason)).toEqual(['stop']);
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: tokensOf(messages), completion_tokens: expected.outputTokens });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('streams without a usage chunk unless asked, and the raw stream ends with data: [DONE]', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages, stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const chunks = text
      .split('\n\n')
      .filter((e) => e && e !== 'data: [DONE]')
      .map((e) => JSON.parse(e.slice('data: '.length)));
    expect(chunks.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
  });

  it('raises the SDK error types from OpenAI-shaped error bodies', async () => {
    const noKey = await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(noKey.status).toBe(401);
    expect(await jsonOf(noKey)).toEqual({
      error: {
        message: expect.stringContaining("didn't provide an API key"),
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });

    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [] })).rejects.toMatchObject({
      status: 400,
      param: 'messages',
      code: 'empty_array',
    });
    await expect(
      client.chat.completions.create({ model: 'gpt-4o-mini', messages, max_tokens: 0 }),
    ).rejects.toMatchObject({ status: 400, code: 'integer_below_min_value' });
    sim.faults.add({ status: 429 });
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages })).rejects.toMatchObject({
      status: 429,
      code: 'rate_limit_exceeded',
    });
  });

  it('a cut stream surfaces as an error in the SDK after the chunks that arrived', async () => {
    sim.faults.add({ cutAfterChunks: 4 });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow();
    expect(seen.join('')).toBe(chatReply(messages).pieces.slice(0, 3).join(''));
  });
});

describe('images.edit', () => {
  const source = editedImagePng({ prompt: 'a source picture', images: [], index: 0, size: '256x256' });
  const second = editedImagePng({ prompt: 'another picture', images: [], index: 0, size: '256x256' });

  it('answers real PNGs derived from the prompt and the input images', async () => {
    const result = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'make it blue',
      image: [
        await toFile(source, 'a.png', { type: 'image/png' }),
        await toFile(second, 'b.png', { type: 'image/png' }),
      ],
      n: 2,
    });
    expect(result.data).toHaveLength(2);
    const pngs = result.data!.map((d) => Buffer.from(d.b64_json!, 'base64'));
    pngs.forEach((png, index) => {
      const info = pngInfo(png);
      expect([info.width, info.height]).toEqual([256, 256]);
      expect(
        png.equals(editedImagePng({ prompt: 'make it blue', images: [source, second], index, size: '256x256' })),
      ).toBe(true);
    });
    expect(pngs[0]!.equals(pngs[1]!)).toBe(false);
    expect(result.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
    });
    expect(result.usage!.total_tokens).toBe(result.usage!.input_tokens + result.usage!.output_tokens);
    expect(sim.requests()).toMatchObject([{ protocol: 'openai-images', model: 'gpt-image-1', status: 200 }]);

    const other = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'make it blue',
      image: await toFile(source, 'a.png', { type: 'image/png' }),
    });
    expect(Buffer.from(other.data![0]!.b64_json!, 'base64').equals(pngs[0]!)).toBe(false);
  });

  it('serves results asked for as url from the sim itself, at the requested size', async () => {
    const result = await client.images.edit({
      model: 'dall-e-2',
      prompt: 'a cat',
      image: await toFile(source, 'a.png', { type: 'image/png' }),
      mask: await toFile(second, 'mask.png', { type: 'image/png' }),
      size: '512x512',
      response_format: 'url',
    });
    const url = result.data![0]!.url!;
    expect(url).toMatch(new RegExp(`^${sim.url}/ch/openai-a/files/img_[0-9a-f]+\\.png$`));
    expect(result.usage).toBeUndefined();
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toBe('image/png');
    const png = Buffer.from(await res.arrayBuffer());
    expect(pngInfo(png)).toMatchObject({ width: 512, height: 512 });
    expect(png.equals(editedImagePng({ prompt: 'a cat', images: [source], index: 0, size: '512x512' }))).toBe(true);
    expect((await fetch(`${sim.url}/files/img_00.png`)).status).toBe(404);
  });

  it('rejects non-image inputs with 400 as OpenAI does, whatever content type the client claims', async () => {
    const error = await client.images
      .edit({
        model: 'gpt-image-1',
        prompt: 'x',
        image: await toFile(Buffer.from('just some text'), 'a.png', { type: 'image/png' }),
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, param: 'image', code: 'unsupported_file_mimetype' });
    await expect(
      client.images.edit({
        model: 'gpt-image-1',
        prompt: 'x',
        image: await toFile(source, 'a.png', { type: 'image/png' }),
        size: '300x300' as '256x256',
      }),
    ).rejects.toMatchObject({ status: 400, param: 'size' });
    const noImage = await fetch(`${sim.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: (() => {
        const f = new FormData();
        f.set('prompt', 'x');
        return f;
      })(),
    });
    expect(noImage.status).toBe(400);
    expect((await jsonOf(noImage)).error).toMatchObject({ param: 'image', code: 'missing_required_parameter' });
  });
});

describe('responses', () => {
  let imageServer: Server;
  let imageUrl: string;
  const served = editedImagePng({ prompt: 'served over http', images: [], index: 0, size: '256x256' });
  beforeAll(async () => {
    imageServer = createServer((req, res) => {
      if (req.url === '/pic.png') res.writeHead(200, { 'content-type': 'image/png' }).end(served);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
    imageUrl = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/pic.png`;
  });
  afterAll(() => new Promise<void>((r) => imageServer.close(() => r())));

  const inline = editedImagePng({ prompt: 'inline data url', images: [], index: 0, size: '256x256' });

  it('answers the image_generation tool with items whose result is a real PNG of prompt and guide', async () => {
    const input = [
      {
        role: 'user' as const,
        content: [
          { type: 'input_text' as const, text: 'paint it red' },
          { type: 'input_image' as const, image_url: imageUrl, detail: 'auto' as const },
        ],
      },
    ];
    const response = await client.responses.create({
      model: 'gpt-4.1',
      tools: [{ type: 'image_generation', size: '256x256' }],
      input,
    });
    expect(response.output.map((o) => o.type)).toEqual(['image_generation_call', 'message']);
    const call = response.output[0] as OpenAI.Responses.ResponseOutputItem.ImageGenerationCall;
    expect(call).toMatchObject({ id: expect.stringMatching(/^ig_/), status: 'completed' });
    const png = Buffer.from(call.result!, 'base64');
    expect(png.equals(editedImagePng({ prompt: 'paint it red', images: [served], index: 0, size: '256x256' }))).toBe(
      true,
    );
    expect(pngInfo(png)).toMatchObject({ width: 256, height: 256 });

    // One image per built-in tool call allowed; a size the tool does not know is the provider's 400.
    const two = await client.responses.create({
      model: 'gpt-4.1',
      tools: [{ type: 'image_generation', size: '256x256' }],
      input: 'two boats',
      max_tool_calls: 2,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(two.output.filter((o) => o.type === 'image_generation_call')).toHaveLength(2);
    await expect(
      client.responses.create({ model: 'gpt-4.1', tools: [{ type: 'image_generation', size: '7x7' }], input: 'x' }),
    ).rejects.toMatchObject({ status: 400, param: 'tools' });
  });

  it('answers a string input with output_text and usage', async () => {
    const response = await client.responses.create({
      model: 'gpt-4.1-mini',
      input: 'Say hi',
      instructions: 'Be brief',
    });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe(chatReply({ instructions: 'Be brief', input: 'Say hi' }).text);
    expect(response.usage).toMatchObject({ input_tokens: tokensOf({ instructions: 'Be brief', input: 'Say hi' }) });
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
  });

  it('names the sha256 of every input image that arrived, data URL or fetched URL', async () => {
    const response = await client.responses.create({
      model: 'gpt-4.1-mini',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'compare these' },
            { type: 'input_image', image_url: `data:image/png;base64,${inline.toString('base64')}`, detail: 'auto' },
            { type: 'input_image', image_url: imageUrl, detail: 'low' },
          ],
        },
      ],
    });
    const text = response.output_text;
    expect(text).toContain(`input_image[0] sha256=${sha256Hex(inline)} bytes=${inline.length} type=image/png`);
    expect(text).toContain(`input_image[1] sha256=${sha256Hex(served)} bytes=${served.length} type=image/png`);
  });

  it('rejects images it cannot fetch or decode with 400', async () => {
    const input = (image_url: string) => [
      { role: 'user' as const, content: [{ type: 'input_image' as const, image_url, detail: 'auto' as const }] },
    ];
    await expect(
      client.responses.create({ model: 'm', input: input(imageUrl.replace('pic.png', 'missing.png')) }),
    ).rejects.toMatchObject({ status: 400, param: 'url' });
    await expect(
      client.responses.create({
        model: 'm',
        input: input(`data:image/png;base64,${Buffer.from('not an image').toString('base64')}`),
      }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'invalid_image_format',
    });
  });

  it('streams response.* events ending in response.completed', async () => {
    const stream = await client.responses.create({ model: 'gpt-4.1-mini', input: 'stream please', stream: true });
    const types: string[] = [];
    let deltas = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    const expected = chatReply({ input: 'stream please' }).text;
    expect(types[0]).toBe('response.created');
    expect(types[types.length - 1]).toBe('response.completed');
    expect(deltas).toBe(expected);
    expect(completed!.output).toMatchObject([
      { type: 'message', status: 'completed', content: [{ type: 'output_text', text: expected }] },
    ]);
  });
});
