// The official @anthropic-ai/sdk pointed at the sim works unchanged (messages.create JSON and streamed), and
// errors come back exactly in Anthropic's shape.
import Anthropic from '@anthropic-ai/sdk';
import { jsonOf } from '@gensvc/testing';
import { chatReply, startSim, tokensOf, type Sim } from './index';

let sim: Sim;
let client: Anthropic;
beforeAll(async () => {
  sim = await startSim();
  client = new Anthropic({ apiKey: 'sk-ant-sim', baseURL: `${sim.url}/ch/claude`, maxRetries: 0, timeout: 5_000 });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const system = 'You answer in one line.';
const messages = [{ role: 'user' as const, content: 'Describe the sea.' }];

describe('anthropic messages', () => {
  it('answers a message whose text and usage follow from system and messages', async () => {
    const message = await client.messages.create({ model: 'claude-sim-large', max_tokens: 1024, system, messages });
    const expected = chatReply({ system, messages });
    expect(message.id).toMatch(/^msg_/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sim-large',
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.content).toEqual([{ type: 'text', text: expected.text }]);
    expect(message.usage).toMatchObject({
      input_tokens: tokensOf({ system, messages }),
      output_tokens: expected.outputTokens,
    });
    expect(sim.requests()).toMatchObject([
      { channel: 'claude', protocol: 'anthropic-messages', model: 'claude-sim-large', status: 200 },
    ]);
  });

  it('stops at max_tokens with stop_reason max_tokens', async () => {
    const message = await client.messages.create({ model: 'claude-sim-small', max_tokens: 3, messages });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
    expect(message.content).toEqual([{ type: 'text', text: chatReply({ messages }, 3).text }]);
  });

  it('streams the real event sequence, which the SDK assembles into the same message', async () => {
    const stream = client.messages.stream({ model: 'claude-sim-large', max_tokens: 1024, system, messages });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    const expected = chatReply({ system, messages });
    expect(text).toBe(expected.text);
    expect(final.content).toMatchObject([{ type: 'text', text: expected.text }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage).toMatchObject({
      input_tokens: tokensOf({ system, messages }),
      output_tokens: expected.outputTokens,
    });

    const raw = await fetch(`${sim.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sim-large', max_tokens: 1024, stream: true, messages }),
    });
    const events = (await raw.text())
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => {
        const [eventLine, dataLine] = frame.split('\n');
        const data = JSON.parse(dataLine!.slice('data: '.length));
        expect(eventLine).toBe(`event: ${data.type}`);
        return data;
      });
    const types = events.map((e) => e.type);
    const deltaCount = chatReply({ messages }).outputTokens;
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array(deltaCount).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0].message).toMatchObject({ type: 'message', role: 'assistant', content: [], stop_reason: null });
    expect(events.find((e) => e.type === 'content_block_delta').delta.type).toBe('text_delta');
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: deltaCount },
    });
  });

  it('answers errors exactly as Anthropic does', async () => {
    const send = (headers: Record<string, string>, body: unknown) =>
      fetch(`${sim.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const valid = { model: 'claude-sim-large', max_tokens: 10, messages };

    const noKey = await send({ 'anthropic-version': '2023-06-01' }, valid);
    expect(noKey.status).toBe(401);
    expect(await jsonOf(noKey)).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'x-api-key header is required' },
    });

    const noVersion = await send({ 'x-api-key': 'k' }, valid);
    expect(noVersion.status).toBe(400);
    expect(await jsonOf(noVersion)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
    });

    const noMax = await send(
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      { model: 'claude-sim-large', messages },
    );
    expect(noMax.status).toBe(400);
    expect(await jsonOf(noMax)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });

    sim.faults.add({ status: 529 });
    await expect(client.messages.create(valid)).rejects.toMatchObject({
      status: 529,
      error: { type: 'error', error: { type: 'overloaded_error' } },
    });
    sim.faults.clear();
    sim.faults.add({ status: 401 });
    await expect(client.messages.create(valid)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('a stream cut mid-way fails the SDK stream instead of ending cleanly', async () => {
    sim.faults.add({ channel: 'claude', cutAfterChunks: 5 });
    const stream = client.messages.stream({ model: 'claude-sim-large', max_tokens: 1024, messages });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    await expect(stream.finalMessage()).rejects.toThrow();
    // message_start, content_block_start, ping, then two deltas arrived.
    expect(text).toBe(chatReply({ messages }).pieces.slice(0, 2).join(''));
    expect(sim.requests()).toMatchObject([{ outcome: 'cut' }]);
  });
});
