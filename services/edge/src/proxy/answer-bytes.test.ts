import { anthropicProtocol } from './anthropic-protocol';
import { answerBytes } from './answer-bytes';
import { geminiProtocol } from './gemini-protocol';
import { openAiProtocol } from './openai-protocol';
import { openAiResponsesProtocol } from './openai-responses-protocol';
import type { ChatCall, ChatProtocol } from './protocol';

const call = { model: { id: 'acme/chat', maxOutputTokens: 1000 } } as ChatCall;

/** What handle() gives the caller for the provider's answer `text`. */
function forward(protocol: ChatProtocol, text: string | Buffer) {
  const raw = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const original = protocol.answerFields.map((f) => json[f]);
  protocol.answer(json, call);
  const out = answerBytes(raw, json, original, protocol.answerFields);
  // Whatever the bytes, they parse to what the protocol made of the answer.
  expect(JSON.parse(out.toString('utf8'))).toEqual(json);
  return out.toString('utf8');
}

describe('answerBytes', () => {
  it("keeps the provider's bytes and splices in the public model id at the top level only", () => {
    const text =
      `{\n  "id": "c1",\n  "model" : "up-1",\n` +
      `  "choices": [{"message": {"content": "say \\"model\\": \\\\", "model": "inner"}}],\n` +
      `  "usage": {"prompt_tokens": 1.0, "completion_tokens": 2e0}\n}\n`;
    expect(forward(openAiProtocol, text)).toBe(text.replace('"up-1"', '"acme/chat"'));
  });

  it('rewrites every occurrence of a duplicated member and a name written with escapes', () => {
    const usage = '"usage":{"prompt_tokens":1,"completion_tokens":1},"x":[1,{"model":"c"}]';
    const text = `{"model":"a","mod\\u0065l":"b",${usage},"model":null}`;
    expect(forward(openAiProtocol, text)).toBe(
      `{"model":"acme/chat","mod\\u0065l":"acme/chat",${usage},"model":"acme/chat"}`,
    );
  });

  it('passes an answer through untouched when nothing was rewritten, non-ASCII text included', () => {
    const text =
      '{"candidates":[{"content":{"parts":[{"text":"Grün — 海"}]}}],' +
      '"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}';
    expect(forward(geminiProtocol, text)).toBe(text);
    const withVersion = '{"modelVersion": "g-1" ,"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}';
    expect(forward(geminiProtocol, withVersion)).toBe(
      '{"modelVersion": "acme/chat" ,"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}',
    );
  });

  it('serialises the parsed answer when a member was added or the bytes are not UTF-8', () => {
    expect(forward(openAiProtocol, '{ "usage": {"prompt_tokens": 1, "completion_tokens": 1} }')).toBe(
      '{"usage":{"prompt_tokens":1,"completion_tokens":1},"model":"acme/chat"}',
    );
    const bad = Buffer.concat([
      Buffer.from('{"model":"up","text":"'),
      Buffer.from([0xff]),
      Buffer.from('","usage":{}}'),
    ]);
    expect(forward(openAiProtocol, bad)).toBe('{"model":"acme/chat","text":"\ufffd","usage":{}}');
  });
});

// answerBytes keeps every byte but the members a protocol names in answerFields: a protocol whose answer() touched
// anything else would send the caller the provider's text for it. Each protocol's own answer shape, with members at
// every level that answer() might be tempted to rewrite.
describe('each protocol rewrites only its answerFields', () => {
  const usage = { prompt_tokens: 3, completion_tokens: 4, input_tokens: 3, output_tokens: 4 };
  const answers: [string, ChatProtocol, Record<string, unknown>][] = [
    [
      'openai',
      openAiProtocol,
      {
        id: 'c',
        object: 'chat.completion',
        model: 'up',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }],
        usage,
      },
    ],
    [
      'anthropic',
      anthropicProtocol,
      { id: 'm', type: 'message', model: 'up', content: [{ type: 'text', text: 'hi' }], usage },
    ],
    [
      'gemini',
      geminiProtocol,
      {
        modelVersion: 'up',
        candidates: [{ content: { parts: [{ text: 'hi' }] } }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 },
      },
    ],
    [
      'openai responses',
      openAiResponsesProtocol,
      {
        id: 'r',
        object: 'response',
        model: 'up',
        output: [{ type: 'message', content: [{ type: 'output_text', text: 'hi' }] }],
        usage,
      },
    ],
  ];
  it.each(answers)('%s', (_name, protocol, answer) => {
    const json = structuredClone(answer);
    expect(protocol.answer(json, call)).not.toBeNull();
    const others = (o: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(o).filter(([k]) => !protocol.answerFields.includes(k)));
    expect(others(json)).toEqual(others(answer));
    expect(protocol.answerFields.some((f) => json[f] !== answer[f])).toBe(true);
  });
});
