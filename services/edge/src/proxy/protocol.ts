// What each vendor protocol (OpenAI chat completions, Anthropic messages, Gemini generateContent) tells the proxy:
// how to address the upstream, how to read usage from its answers, and how to pass its stream on to the caller.
import type { ChannelKind } from '@gensvc/db';
import { UpstreamFailure, type CatalogModel, type CatalogRoute } from '@gensvc/upstream';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** One caller request, validated, with the model it names and that model's routes of this protocol. */
export interface ChatCall {
  model: CatalogModel;
  routes: CatalogRoute[];
  /** The caller's JSON body; the upstream request is made from it, with the model name replaced. */
  body: Record<string, unknown>;
  stream: boolean;
  /** The caller's output cap (max_tokens and the like), which bounds the reservation. */
  maxOutputTokens: number | undefined;
  /** How many answers one call asks for (OpenAI `n`, Gemini `candidateCount`): each may use maxOutputTokens. */
  choices: number;
  /** OpenAI: the caller asked for the usage chunk at the end of a stream (stream_options.include_usage). */
  includeUsage?: boolean;
  /** Anthropic: the caller's anthropic-version and anthropic-beta headers, passed on. */
  anthropicVersion?: string;
  anthropicBeta?: string;
  /** Gemini: the caller asked for SSE (alt=sse) rather than Google's streamed JSON array. */
  sse?: boolean;
}

interface UpstreamRequest {
  /** Path after the channel's base URL, with its query. */
  path: string;
  headers: Record<string, string>;
}

/** Turns one upstream event stream into the caller's, event by event, keeping the reported usage. */
export interface StreamTranslator {
  readonly contentType: string;
  /**
   * One upstream SSE event (its raw text) → what the caller gets ('' to drop it). Throws UpstreamFailure
   * invalid_response on an event that cannot be read.
   */
  event(raw: string): string;
  /**
   * Called when the upstream ends its body cleanly: what to write last, or null when the protocol's end marker
   * never came (the stream was cut) and the caller must get cut() instead.
   */
  end(): string | null;
  /** The protocol's in-stream error event, sent when the upstream fails after the first byte went out. */
  cut(message: string): string;
  /** The usage reported so far (Anthropic and Gemini report it as they go; OpenAI in its last chunk). */
  usage(): Usage | null;
}

export interface ChatProtocol {
  readonly kind: ChannelKind & ('openai' | 'anthropic' | 'gemini');
  /** How callers name the protocol in messages. */
  readonly label: string;
  request(call: ChatCall, upstreamModel: string, channel: CatalogRoute['channel']): UpstreamRequest;
  /** The JSON body sent upstream for this upstream model name (serialised once per name). */
  body(call: ChatCall, upstreamModel: string): string;
  /** Rewrites a complete JSON answer for the caller (model name) and returns its usage, or null if it has none. */
  answer(json: Record<string, unknown>, call: ChatCall): Usage | null;
  /**
   * The top-level members answer() may rewrite, and the only thing it may change: the caller gets the provider's
   * bytes with these members' new values spliced in (answer-bytes.ts).
   */
  readonly answerFields: readonly string[];
  translator(call: ChatCall): StreamTranslator;
}

/**
 * The request body with the caller's output caps (the named fields of `target`) lowered to the model's
 * maxOutputTokens where they are above it, and `fill` set to it when the caller gave no cap: the hold covers no
 * more output than that, so the provider is never asked for more than was reserved (and charged at most the hold).
 */
export function capOutput(
  target: Record<string, unknown>,
  fields: readonly string[],
  model: CatalogModel,
  fill: string = fields[0]!,
): Record<string, unknown> {
  let out = target;
  let capped = false;
  for (const f of fields) {
    const v = target[f];
    if (typeof v !== 'number') continue;
    capped = true;
    if (v > model.maxOutputTokens) {
      if (out === target) out = { ...target };
      out[f] = model.maxOutputTokens;
    }
  }
  return capped ? out : { ...target, [fill]: model.maxOutputTokens };
}

/** A JSON event or answer the proxy cannot read: another channel may still answer before the first byte. */
export const invalidResponse = (what: string) => new UpstreamFailure(what, 'invalid_response', true);

export function parseObject(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidResponse(`${what} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalidResponse(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** A token count as providers send it: a non-negative integer, or absent (0). */
export function tokens(v: unknown): number | null {
  if (v === undefined || v === null) return 0;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}
