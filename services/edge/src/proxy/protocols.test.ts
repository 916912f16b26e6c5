import type { CatalogModel } from '@gensvc/upstream';
import { anthropicProtocol } from './anthropic-protocol';
import { geminiProtocol } from './gemini-protocol';
import { openAiProtocol } from './openai-protocol';
import type { ChatCall } from './protocol';

const model = { id: 'acme/chat', maxOutputTokens: 1000 } as CatalogModel;
const call = (body: Record<string, unknown>, over: Partial<ChatCall> = {}): ChatCall =>
  ({ model, routes: [], body, stream: false, maxOutputTokens: undefined, choices: 1, ...over }) as ChatCall;
const sent = (s: string) => JSON.parse(s);

describe('upstream bodies', () => {
  it("name the upstream model and lower output caps above the maximum, leaving the caller's body as is", () => {
    const body = {
      model: 'acme/chat',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 50_000,
      max_completion_tokens: 20,
    };
    expect(sent(openAiProtocol.body(call(body), 'chat-v2'))).toEqual({ ...body, model: 'chat-v2', max_tokens: 1000 });
    expect(body.max_tokens).toBe(50_000);
    expect(
      sent(anthropicProtocol.body(call({ model: 'acme/chat', max_tokens: 4000, messages: [] }), 'claude-x')),
    ).toEqual({ model: 'claude-x', max_tokens: 1000, messages: [] });
    const gemini = { contents: [], generationConfig: { temperature: 0, maxOutputTokens: 9999 } };
    expect(sent(geminiProtocol.body(call(gemini), 'g'))).toEqual({
      contents: [],
      generationConfig: { temperature: 0, maxOutputTokens: 1000 },
    });
    // No cap from the caller: the model's is sent, so output never exceeds what was held.
    expect(sent(openAiProtocol.body(call({ model: 'acme/chat', messages: [] }), 'c'))).toEqual({
      model: 'c',
      messages: [],
      max_completion_tokens: 1000,
    });
    expect(sent(geminiProtocol.body(call({ contents: [] }), 'g'))).toEqual({
      contents: [],
      generationConfig: { maxOutputTokens: 1000 },
    });
  });

  it("ask an OpenAI stream for its usage, keeping the caller's other stream options", () => {
    const body = { model: 'acme/chat', messages: [], stream: true, stream_options: { include_obfuscation: false } };
    expect(sent(openAiProtocol.body(call(body, { stream: true }), 'm')).stream_options).toEqual({
      include_obfuscation: false,
      include_usage: true,
    });
  });
});

describe('OpenAI stream translation', () => {
  const chunk = (extra: object) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'up', ...extra })}`;
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };

  it('renames the model, counts usage and drops the usage chunk the caller did not ask for', () => {
    const t = openAiProtocol.translator(call({}, { stream: true, includeUsage: false }));
    expect(sent(t.event(chunk({ choices: [{ delta: { content: 'hi' } }], usage: null })).slice(6))).toEqual({
      id: 'c',
      object: 'chat.completion.chunk',
      model: 'acme/chat',
      choices: [{ delta: { content: 'hi' } }],
    });
    expect(t.event(chunk({ choices: [], usage }))).toBe('');
    expect(t.end()).toBeNull();
    expect(t.event('data: [DONE]')).toBe('data: [DONE]\n\n');
    expect(t.end()).toBe('');
    expect(t.usage()).toEqual({ inputTokens: 7, outputTokens: 3 });
  });

  it("keeps the usage chunk for a caller who asked, and treats the provider's error event as a failed stream", () => {
    const t = openAiProtocol.translator(call({}, { stream: true, includeUsage: true }));
    expect(sent(t.event(chunk({ choices: [], usage })).slice(6)).usage).toEqual(usage);
    expect(t.event('data: {"error":{"message":"overloaded"}}')).toBe('data: {"error":{"message":"overloaded"}}\n\n');
    expect(t.end()).toBe('');
    expect(() => t.event('data: {not json')).toThrow(/not valid JSON/);
  });
});
