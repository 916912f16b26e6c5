// OpenAI Responses: POST {baseUrl}/v1/responses with the channel's bearer secret. The answer is a `response`
// object whose usage counts input_tokens (cached ones included) and output_tokens (reasoning included). Streams are
// named events (`event: response.output_text.delta` ...) with no end marker of their own: the stream is complete
// once a terminal event (response.completed or response.incomplete) arrived, and failed after response.failed or
// an `error` event. The lifecycle events carry the whole response, the model name and (the terminal ones) the usage:
// they are the ones rewritten; every other event is passed on byte for byte.
import {
  capOutput,
  invalidResponse,
  parseObject,
  tokens,
  type ChatCall,
  type ChatProtocol,
  type StreamTranslator,
  type Usage,
} from './protocol';
import { parseSseEvent } from './sse-splitter';

/** Events whose data carries the response object (the model name to rewrite, usage once it is known). */
const LIFECYCLE = new Set([
  'response.created',
  'response.queued',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);
/** A response that ended: completed, or cut short by max_output_tokens (still a whole, billable answer). */
const FINISHED = new Set(['response.completed', 'response.incomplete']);
const INTERRUPTED = 'upstream_stream_interrupted';

function usageOf(u: unknown): Usage | null {
  if (u === null || typeof u !== 'object') return null;
  const { input_tokens, output_tokens } = u as Record<string, unknown>;
  const inputTokens = tokens(input_tokens);
  const outputTokens = tokens(output_tokens);
  return inputTokens === null || outputTokens === null ? null : { inputTokens, outputTokens };
}

class ResponsesStream implements StreamTranslator {
  readonly contentType = 'text/event-stream; charset=utf-8';
  private reported: Usage | null = null;
  private state: 'open' | 'done' | 'errored' = 'open';
  /** Events seen; sequence numbers count events from 0, so this is the next one's. */
  private seen = 0;

  constructor(private readonly call: ChatCall) {}

  event(raw: string): string {
    const { event, data } = parseSseEvent(raw);
    if (data === null) return '';
    this.seen++;
    // Providers name every event; one without a name is read for its type.
    let parsed: Record<string, unknown> | undefined;
    let type = event;
    if (type === undefined) {
      parsed = parseObject(data, 'a stream event');
      type = typeof parsed.type === 'string' ? parsed.type : '';
    }
    if (type === 'error') {
      this.state = 'errored';
      return `${raw}\n\n`;
    }
    if (!LIFECYCLE.has(type)) return `${raw}\n\n`;
    parsed ??= parseObject(data, `a ${type} event`);
    const response = parsed.response as Record<string, unknown> | null | undefined;
    if (response === null || typeof response !== 'object' || Array.isArray(response))
      throw invalidResponse(`a ${type} event carries no response`);
    response.model = this.call.model.id;
    this.reported = usageOf(response.usage) ?? this.reported;
    if (FINISHED.has(type)) this.state = 'done';
    else if (type === 'response.failed') this.state = 'errored';
    return `event: ${type}\ndata: ${JSON.stringify(parsed)}\n\n`;
  }

  end(): string | null {
    return this.state === 'open' ? null : '';
  }

  /**
   * The Responses `error` event. Its fields are given both flat (as OpenAI documents the event) and nested under
   * `error` (as OpenAI sends it, and as the official SDKs look for it to throw).
   */
  cut(message: string): string {
    const error = { type: 'upstream_error', code: INTERRUPTED, message, param: null };
    const body = { type: 'error', code: INTERRUPTED, message, param: null, sequence_number: this.seen, error };
    return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
  }

  usage(): Usage | null {
    return this.reported;
  }
}

export const openAiResponsesProtocol: ChatProtocol = {
  kind: 'openai',
  label: 'OpenAI Responses',
  request(_call, _upstreamModel, channel) {
    return {
      path: '/v1/responses',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${channel.secret}` },
    };
  },
  body(call, upstreamModel) {
    return JSON.stringify({ ...capOutput(call.body, ['max_output_tokens'], call.model), model: upstreamModel });
  },
  answerFields: ['model'],
  answer(json, call) {
    if (!Array.isArray(json.output)) throw invalidResponse('the answer is not a response object (no output)');
    json.model = call.model.id;
    return usageOf(json.usage);
  },
  translator(call) {
    return new ResponsesStream(call);
  },
};
