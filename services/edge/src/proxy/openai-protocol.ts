// OpenAI chat completions: POST {baseUrl}/v1/chat/completions with the channel's bearer secret. Streams are
// `data: {chunk}` events ending with `data: [DONE]`; usage comes in a last chunk with no choices, which only
// arrives when stream_options.include_usage is set, so the proxy always sets it and removes that chunk again for
// callers who did not ask for it.
import { capOutput, parseObject, tokens, type ChatCall, type ChatProtocol, type StreamTranslator, type Usage } from './protocol';
import { parseSseEvent } from './sse-splitter';

const OUTPUT_CAPS = ['max_tokens', 'max_completion_tokens'] as const;

function usageOf(u: unknown): Usage | null {
  if (u === null || typeof u !== 'object') return null;
  const { prompt_tokens, completion_tokens } = u as Record<string, unknown>;
  const inputTokens = tokens(prompt_tokens);
  const outputTokens = tokens(completion_tokens);
  return inputTokens === null || outputTokens === null ? null : { inputTokens, outputTokens };
}

const errorEvent = (message: string) =>
  `data: ${JSON.stringify({ error: { message, type: 'upstream_error', param: null, code: 'upstream_stream_interrupted' } })}\n\n`;

const NULL_USAGE_TAIL = ',"usage":null}';

/**
 * Whether position `at` of `text` (a valid JSON object) lies directly in the top-level object, outside any string:
 * then a `"key":` there is one of the object's own keys, not a nested one's nor part of a string.
 */
function atTopLevel(text: string, at: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \\ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) depth++;
    else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return depth === 1 && !inString;
}

class OpenAiStream implements StreamTranslator {
  readonly contentType = 'text/event-stream; charset=utf-8';
  private reported: Usage | null = null;
  private state: 'open' | 'done' | 'errored' = 'open';
  private modelJson: string | undefined;

  constructor(private readonly call: ChatCall) {}

  event(raw: string): string {
    const { data } = parseSseEvent(raw);
    if (data === null) return '';
    if (data === '[DONE]') {
      this.state = 'done';
      return 'data: [DONE]\n\n';
    }
    const chunk = parseObject(data, 'a stream chunk');
    if (chunk.error !== undefined) {
      // The provider's own in-stream error: passed on as it is, and the stream counts as failed.
      this.state = 'errored';
      return `data: ${data}\n\n`;
    }
    const usage = chunk.usage;
    if (usage !== undefined && usage !== null) this.reported = usageOf(usage) ?? this.reported;
    const dropUsage = !this.call.includeUsage && usage !== undefined;
    if (dropUsage && usage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return '';
    // A usage chunk kept with its choices (rare) loses its usage through the re-serialisation below.
    const text = dropUsage && usage !== null ? null : this.rewritten(data, chunk.model, dropUsage);
    if (text !== null) return `data: ${text}\n\n`;
    if (chunk.model !== undefined) chunk.model = this.call.model.id;
    if (dropUsage) delete chunk.usage;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  /**
   * The chunk's text (valid JSON, already parsed) with its top-level `model` renamed and, when `dropNullUsage`, its
   * trailing `,"usage":null` removed, edited as text (the chunk's other bytes pass on as the provider wrote them);
   * null when the text is not in the shape this edit is sure of, and the chunk is re-serialised instead.
   */
  private rewritten(data: string, model: unknown, dropNullUsage: boolean): string | null {
    let text = data;
    if (dropNullUsage) {
      // In valid JSON these bytes just before the closing brace can only be the top-level key `usage` and its value.
      if (!text.endsWith(NULL_USAGE_TAIL)) return null;
      text = `${text.slice(0, -NULL_USAGE_TAIL.length)}}`;
    }
    if (model === undefined) return text;
    if (typeof model !== 'string') return null;
    // The one `"model"` in the text, at the top level and written as JSON.stringify writes it (else: re-serialised).
    const needle = `"model":${JSON.stringify(model)}`;
    const at = text.indexOf('"model"');
    if (!text.startsWith(needle, at) || !atTopLevel(text, at) || text.indexOf('"model"', at + needle.length) >= 0) return null;
    return `${text.slice(0, at)}"model":${(this.modelJson ??= JSON.stringify(this.call.model.id))}${text.slice(at + needle.length)}`;
  }

  end(): string | null {
    return this.state === 'open' ? null : '';
  }

  cut(message: string): string {
    return errorEvent(message);
  }

  usage(): Usage | null {
    return this.reported;
  }
}

export const openAiProtocol: ChatProtocol = {
  kind: 'openai',
  label: 'OpenAI chat completions',
  request(_call, _upstreamModel, channel) {
    return {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${channel.secret}` },
    };
  },
  body(call, upstreamModel) {
    const body: Record<string, unknown> = { ...capOutput(call.body, OUTPUT_CAPS, call.model, 'max_completion_tokens'), model: upstreamModel };
    if (call.stream) {
      const options = call.body.stream_options;
      body.stream_options = options !== null && typeof options === 'object' ? { ...options, include_usage: true } : { include_usage: true };
    }
    return JSON.stringify(body);
  },
  answer(json, call) {
    json.model = call.model.id;
    return usageOf(json.usage);
  },
  translator(call) {
    return new OpenAiStream(call);
  },
};
