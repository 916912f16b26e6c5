// Gemini generateContent: POST {baseUrl}/v1beta/models/{model}:generateContent (or :streamGenerateContent) with
// the channel's x-goog-api-key. The upstream stream is always asked for as SSE (one event per JSON chunk, easy to
// cut), and given to the caller in the form they asked for: SSE with alt=sse, else Google's streamed JSON array.
// Every chunk carries usageMetadata so far; the answer's modelVersion becomes the caller's model id.
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

/** Thinking tokens are output the model generated (Google bills them as output); tool-use prompt tokens are input. */
function usageOf(u: unknown): Usage | null {
  if (u === null || typeof u !== 'object') return null;
  const o = u as Record<string, unknown>;
  if (o.promptTokenCount === undefined) return null;
  const prompt = tokens(o.promptTokenCount);
  const toolPrompt = tokens(o.toolUsePromptTokenCount);
  const candidates = tokens(o.candidatesTokenCount);
  const thoughts = tokens(o.thoughtsTokenCount);
  if (prompt === null || toolPrompt === null || candidates === null || thoughts === null) return null;
  return { inputTokens: prompt + toolPrompt, outputTokens: candidates + thoughts };
}

const errorBody = (message: string) => JSON.stringify({ error: { code: 502, message, status: 'UNAVAILABLE' } });

class GeminiStream implements StreamTranslator {
  readonly contentType: string;
  private reported: Usage | null = null;
  private items = 0;
  private errored = false;

  constructor(private readonly call: ChatCall) {
    this.contentType = call.sse ? 'text/event-stream' : 'application/json; charset=UTF-8';
  }

  event(raw: string): string {
    const { data } = parseSseEvent(raw);
    if (data === null) return '';
    const chunk = parseObject(data, 'a stream chunk');
    if (chunk.error !== undefined) {
      this.errored = true;
      return this.item(data);
    }
    if (chunk.modelVersion !== undefined) chunk.modelVersion = this.call.model.id;
    if (chunk.usageMetadata !== undefined) this.reported = usageOf(chunk.usageMetadata) ?? this.reported;
    return this.item(JSON.stringify(chunk));
  }

  private item(json: string): string {
    if (this.call.sse) return `data: ${json}\r\n\r\n`;
    return `${this.items++ === 0 ? '[' : '\n,\r\n'}${json}`;
  }

  /** Gemini has no end marker: a clean end of the body is the end. The JSON array is closed only then. */
  end(): string | null {
    if (this.call.sse) return '';
    return this.items === 0 ? '[]' : '\n]';
  }

  /** In the JSON-array form the error is the last element and the array is left unclosed: no clean finish. */
  cut(message: string): string {
    return this.errored ? '' : this.item(errorBody(message));
  }

  usage(): Usage | null {
    return this.reported;
  }
}

export const geminiProtocol: ChatProtocol = {
  kind: 'gemini',
  label: 'Gemini generateContent',
  request(call, upstreamModel, channel) {
    return {
      path: `/v1beta/models/${upstreamModel}:${call.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      headers: { 'content-type': 'application/json', 'x-goog-api-key': channel.secret },
    };
  },
  body(call) {
    const config = call.body.generationConfig;
    const base = config !== null && typeof config === 'object' ? (config as Record<string, unknown>) : {};
    const capped = capOutput(base, ['maxOutputTokens'], call.model);
    return JSON.stringify(capped === config ? call.body : { ...call.body, generationConfig: capped });
  },
  answerFields: ['modelVersion'],
  answer(json, call) {
    if (json.modelVersion !== undefined) json.modelVersion = call.model.id;
    return usageOf(json.usageMetadata);
  },
  translator(call) {
    return new GeminiStream(call);
  },
};
