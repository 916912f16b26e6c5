// OpenAI chat completions: POST {baseUrl}/v1/chat/completions with the channel's bearer secret. Streams are
// `data: {chunk}` events ending with `data: [DONE]`; usage comes in a last chunk with no choices, which only
// arrives when stream_options.include_usage is set, so the proxy always sets it and removes that chunk again for
// callers who did not ask for it.
import {
  capOutput,
  parseObject,
  tokens,
  type ChatCall,
  type ChatProtocol,
  type StreamTranslator,
  type Usage,
} from './protocol';
import { parseSseEvent } from './sse-splitter';

const OUTPUT_CAPS = ['max_tokens', 'max_completion_tokens'] as const;

function usageOf(u: unknown): Usage | null {
  if (u === null || typeof u !== 'object') return null;
  const { prompt_tokens, completion_tokens } = u as Record<string, unknown>;
  const inputTokens = tokens(prompt_tokens);
  const outputTokens = tokens(completion_tokens);
  return inputTokens === null || outputTokens === null ? null : { inputTokens, outputTokens };
}

const errorEvent = (message: string) => {
  const error = { message, type: 'upstream_error', param: null, code: 'upstream_stream_interrupted' };
  return `data: ${JSON.stringify({ error })}\n\n`;
};

class OpenAiStream implements StreamTranslator {
  readonly contentType = 'text/event-stream; charset=utf-8';
  private reported: Usage | null = null;
  private state: 'open' | 'done' | 'errored' = 'open';

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
    if (chunk.model !== undefined) chunk.model = this.call.model.id;
    const usage = chunk.usage;
    if (usage !== undefined && usage !== null) this.reported = usageOf(usage) ?? this.reported;
    if (!this.call.includeUsage) {
      if (usage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return '';
      delete chunk.usage;
    }
    return `data: ${JSON.stringify(chunk)}\n\n`;
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
    const body: Record<string, unknown> = {
      ...capOutput(call.body, OUTPUT_CAPS, call.model, 'max_completion_tokens'),
      model: upstreamModel,
    };
    if (call.stream) {
      const options = call.body.stream_options;
      body.stream_options =
        options !== null && typeof options === 'object' ? { ...options, include_usage: true } : { include_usage: true };
    }
    return JSON.stringify(body);
  },
  answerFields: ['model'],
  answer(json, call) {
    json.model = call.model.id;
    return usageOf(json.usage);
  },
  translator(call) {
    return new OpenAiStream(call);
  },
};
