// Anthropic messages: POST {baseUrl}/v1/messages with the channel's x-api-key and the caller's anthropic-version
// (and anthropic-beta). The stream is named events; usage arrives as it goes: input tokens in message_start,
// the running output count in each message_delta. Only message_start carries the model, so it is the one event
// rewritten; every other event is passed on byte for byte.
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

interface Counted {
  input: number | null;
  output: number | null;
}

/** Cache writes and reads are input the model read; they are counted at the model's one input price. */
function countOf(u: unknown): Counted {
  if (u === null || typeof u !== 'object') return { input: null, output: null };
  const o = u as Record<string, unknown>;
  const parts = [tokens(o.input_tokens), tokens(o.cache_creation_input_tokens), tokens(o.cache_read_input_tokens)];
  const input = o.input_tokens === undefined || parts.includes(null) ? null : parts.reduce<number>((s, n) => s + n!, 0);
  const output = o.output_tokens === undefined ? null : tokens(o.output_tokens);
  return { input, output };
}

const errorEvent = (message: string) =>
  `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`;

class AnthropicStream implements StreamTranslator {
  readonly contentType = 'text/event-stream; charset=utf-8';
  private input: number | null = null;
  private output: number | null = null;
  private state: 'open' | 'done' | 'errored' = 'open';

  constructor(private readonly call: ChatCall) {}

  event(raw: string): string {
    const { event, data } = parseSseEvent(raw);
    switch (event) {
      case 'message_start': {
        const start = parseObject(data ?? '', 'message_start');
        const message = start.message as Record<string, unknown> | undefined;
        if (message === null || typeof message !== 'object') return `${raw}\n\n`;
        message.model = this.call.model.id;
        this.count(countOf(message.usage));
        return `event: message_start\ndata: ${JSON.stringify(start)}\n\n`;
      }
      case 'message_delta':
        this.count(countOf(parseObject(data ?? '', 'message_delta').usage));
        break;
      case 'message_stop':
        this.state = 'done';
        break;
      case 'error':
        this.state = 'errored';
        break;
    }
    return `${raw}\n\n`;
  }

  private count(c: Counted) {
    if (c.input !== null) this.input = c.input;
    if (c.output !== null) this.output = c.output;
  }

  end(): string | null {
    return this.state === 'open' ? null : '';
  }

  cut(message: string): string {
    return errorEvent(message);
  }

  usage(): Usage | null {
    if (this.input === null && this.output === null) return null;
    return { inputTokens: this.input ?? 0, outputTokens: this.output ?? 0 };
  }
}

export const anthropicProtocol: ChatProtocol = {
  kind: 'anthropic',
  label: 'Anthropic messages',
  request(call, _upstreamModel, channel) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-api-key': channel.secret,
      // Required of the caller by POST /v1/messages, the protocol's only route.
      'anthropic-version': call.anthropicVersion!,
    };
    if (call.anthropicBeta) headers['anthropic-beta'] = call.anthropicBeta;
    return { path: '/v1/messages', headers };
  },
  body(call, upstreamModel) {
    return JSON.stringify({ ...capOutput(call.body, ['max_tokens'], call.model), model: upstreamModel });
  },
  answerFields: ['model'],
  answer(json, call) {
    json.model = call.model.id;
    const { input, output } = countOf(json.usage);
    return input === null || output === null ? null : { inputTokens: input, outputTokens: output };
  },
  translator(call) {
    return new AnthropicStream(call);
  },
};
