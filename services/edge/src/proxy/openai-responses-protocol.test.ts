import type { CatalogModel } from '@gensvc/upstream';
import { UpstreamFailure } from '@gensvc/upstream';
import { openAiResponsesProtocol as protocol } from './openai-responses-protocol';
import type { ChatCall } from './protocol';
import { parseSseEvent } from './sse-splitter';

const model = { id: 'acme/chat', maxOutputTokens: 1000 } as CatalogModel;
const call = (body: Record<string, unknown> = {}, over: Partial<ChatCall> = {}): ChatCall =>
  ({ model, routes: [], body, stream: true, maxOutputTokens: undefined, choices: 1, ...over }) as ChatCall;
const sent = (s: string) => JSON.parse(s);
/** An upstream event as OpenAI frames it. */
const ev = (type: string, data: object, seq: number) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: seq })}`;
const response = (status: string, usage: object | null) => ({
  id: 'resp_1',
  object: 'response',
  status,
  model: 'gpt-up',
  output: [],
  usage,
});
const data = (out: string) => JSON.parse(parseSseEvent(out.replace(/\n\n$/, '')).data!);

describe('OpenAI Responses upstream body', () => {
  it("names the upstream model and holds max_output_tokens to the model's maximum, filling it when absent", () => {
    const body = { model: 'acme/chat', input: 'hi', max_output_tokens: 50_000, temperature: 0 };
    expect(sent(protocol.body(call(body), 'gpt-up'))).toEqual({ ...body, model: 'gpt-up', max_output_tokens: 1000 });
    expect(body.max_output_tokens).toBe(50_000);
    expect(sent(protocol.body(call({ model: 'acme/chat', input: 'hi', max_output_tokens: 12 }), 'g'))).toEqual({
      model: 'g',
      input: 'hi',
      max_output_tokens: 12,
    });
    expect(sent(protocol.body(call({ model: 'acme/chat', input: 'hi' }), 'g'))).toEqual({
      model: 'g',
      input: 'hi',
      max_output_tokens: 1000,
    });
    expect(protocol.request(call(), 'g', { secret: 's3cret' } as never)).toEqual({
      path: '/v1/responses',
      headers: { 'content-type': 'application/json', authorization: 'Bearer s3cret' },
    });
  });
});

describe('OpenAI Responses answers', () => {
  it('renames the model and reads usage (cached input and reasoning output are already inside the totals)', () => {
    const json: Record<string, unknown> = {
      ...response('completed', {
        input_tokens: 30,
        input_tokens_details: { cached_tokens: 10 },
        output_tokens: 12,
        output_tokens_details: { reasoning_tokens: 5 },
        total_tokens: 42,
      }),
    };
    expect(protocol.answer(json, call())).toEqual({ inputTokens: 30, outputTokens: 12 });
    expect(json.model).toBe('acme/chat');
    expect(protocol.answer({ ...response('completed', null) }, call())).toBeNull();
    expect(protocol.answer({ ...response('completed', { input_tokens: -1, output_tokens: 2 }) }, call())).toBeNull();
  });

  it('refuses an answer that is not a response object, so another channel may answer', () => {
    const err = (() => {
      try {
        protocol.answer({ object: 'response', usage: { input_tokens: 1, output_tokens: 1 } }, call());
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UpstreamFailure);
    expect(err).toMatchObject({ kind: 'invalid_response', failover: true });
  });
});

describe('OpenAI Responses stream translation', () => {
  const usage = { input_tokens: 9, output_tokens: 4, total_tokens: 13 };

  it("renames the model in lifecycle events, passes others byte for byte, ends with response.completed's usage", () => {
    const t = protocol.translator(call());
    const created = t.event(ev('response.created', { response: response('in_progress', null) }, 0));
    expect(created.startsWith('event: response.created\ndata: ')).toBe(true);
    expect(data(created)).toMatchObject({
      type: 'response.created',
      sequence_number: 0,
      response: { model: 'acme/chat', status: 'in_progress' },
    });
    const delta = ev(
      'response.output_text.delta',
      { item_id: 'm', output_index: 0, content_index: 0, delta: 'Hel' },
      1,
    );
    expect(t.event(delta)).toBe(`${delta}\n\n`);
    expect(t.event(': keep-alive')).toBe('');
    expect(t.usage()).toBeNull();
    // No terminal event yet: an end here is a cut stream.
    expect(t.end()).toBeNull();
    const done = t.event(ev('response.completed', { response: response('completed', usage) }, 2));
    expect(data(done)).toMatchObject({ type: 'response.completed', response: { model: 'acme/chat', usage } });
    expect(t.end()).toBe('');
    expect(t.usage()).toEqual({ inputTokens: 9, outputTokens: 4 });
  });

  it('counts response.incomplete (cut by max_output_tokens) as a finished, billable answer', () => {
    const t = protocol.translator(call());
    t.event(ev('response.incomplete', { response: response('incomplete', usage) }, 0));
    expect(t.end()).toBe('');
    expect(t.usage()).toEqual({ inputTokens: 9, outputTokens: 4 });
  });

  it('reads events sent without an event: line by their type', () => {
    const t = protocol.translator(call());
    const out = t.event(
      `data: ` +
        `${JSON.stringify({ type: 'response.completed', sequence_number: 0, response: response('completed', usage) })}`,
    );
    expect(data(out).response.model).toBe('acme/chat');
    expect(t.end()).toBe('');
  });

  it("treats response.failed and the provider's error event as a failed stream, passed on to the caller", () => {
    const failed = protocol.translator(call());
    const out = failed.event(
      ev(
        'response.failed',
        {
          response: {
            ...response('failed', { input_tokens: 5, output_tokens: 0 }),
            error: { code: 'server_error', message: 'boom' },
          },
        },
        0,
      ),
    );
    expect(data(out).response).toMatchObject({ status: 'failed', model: 'acme/chat' });
    expect(failed.end()).toBe('');
    expect(failed.usage()).toEqual({ inputTokens: 5, outputTokens: 0 });
    const errored = protocol.translator(call());
    const raw = ev(
      'error',
      { error: { type: 'server_error', code: 'server_error', message: 'overloaded', param: null } },
      0,
    );
    expect(errored.event(raw)).toBe(`${raw}\n\n`);
    expect(errored.end()).toBe('');
    expect(errored.usage()).toBeNull();
  });

  it('refuses unreadable lifecycle events (before the first byte another channel is tried)', () => {
    const t = protocol.translator(call());
    expect(() => t.event('event: response.created\ndata: {"type":"respon')).toThrow(/not valid JSON/);
    expect(() => t.event(ev('response.created', { response: null }, 0))).toThrow(/carries no response/);
  });

  it('cuts with an error event the SDKs throw on: fields flat and nested, numbered after the last event', () => {
    const t = protocol.translator(call());
    t.event(ev('response.created', { response: response('in_progress', null) }, 0));
    t.event(ev('response.output_text.delta', { delta: 'x' }, 1));
    const cut = t.cut('The stream was interrupted.');
    expect(cut.startsWith('event: error\ndata: ')).toBe(true);
    expect(data(cut)).toEqual({
      type: 'error',
      code: 'upstream_stream_interrupted',
      message: 'The stream was interrupted.',
      param: null,
      sequence_number: 2,
      error: {
        type: 'upstream_error',
        code: 'upstream_stream_interrupted',
        message: 'The stream was interrupted.',
        param: null,
      },
    });
  });
});
