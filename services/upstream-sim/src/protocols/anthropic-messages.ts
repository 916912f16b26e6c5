// Anthropic POST /v1/messages: a key (x-api-key, or a bearer as the current SDK sends it), anthropic-version
// and max_tokens required; a message JSON answer, or with stream: true the event stream message_start,
// content_block_start, ping, content_block_delta (text_delta)..., content_block_stop, message_delta (stop_reason,
// usage.output_tokens), message_stop.
import { randomBytes, randomUUID } from 'node:crypto';
import { chatReply, tokensOf } from '../deterministic';
import { bearer, isPositiveInt, jsonObject, type Protocol } from '../protocol';
import { json, type Reply, type SseEvent } from '../reply';

interface MessagesRequest {
  model: string;
  system?: unknown;
  messages: unknown[];
  maxTokens: number;
  stream: boolean;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const requestHeaders = () => ({ 'request-id': `req_${randomUUID().replace(/-/g, '')}` });

function anthropicError(status: number, message?: string): Reply {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return json(
    status,
    { type: 'error', error: { type, message: message ?? (status === 529 ? 'Overloaded' : `simulated ${type}`) } },
    requestHeaders(),
  );
}

const messageId = () => `msg_01${randomBytes(16).toString('base64url').replace(/[-_]/g, 'x').slice(0, 22)}`;

export const anthropicMessagesProtocol: Protocol<MessagesRequest> = {
  name: 'anthropic-messages',
  matches: (method, path) => method === 'POST' && path === '/v1/messages',
  parse(r) {
    const body = jsonObject(r.body);
    const model = typeof body?.model === 'string' ? body.model : undefined;
    // Anthropic takes the key in x-api-key or, as its current SDK sends it, as a bearer token.
    const key = r.req.headers['x-api-key'];
    if ((typeof key !== 'string' || key.trim() === '') && !bearer(r.req))
      return { model, error: anthropicError(401, 'x-api-key header is required') };
    const version = r.req.headers['anthropic-version'];
    if (typeof version !== 'string' || version.trim() === '')
      return { model, error: anthropicError(400, 'anthropic-version: header is required') };
    if (!body)
      return {
        model,
        error: anthropicError(400, 'There was an error parsing the body of your request: expected a JSON object.'),
      };
    if (!model) return { model, error: anthropicError(400, 'model: Field required') };
    if (body.max_tokens === undefined) return { model, error: anthropicError(400, 'max_tokens: Field required') };
    if (!isPositiveInt(body.max_tokens))
      return { model, error: anthropicError(400, 'max_tokens: Input should be greater than or equal to 1') };
    if (body.messages === undefined) return { model, error: anthropicError(400, 'messages: Field required') };
    if (!Array.isArray(body.messages))
      return { model, error: anthropicError(400, 'messages: Input should be a valid list') };
    if (body.messages.length === 0)
      return { model, error: anthropicError(400, 'messages: at least one message is required') };
    for (const [i, m] of body.messages.entries()) {
      const role = (m as { role?: unknown } | null)?.role;
      if (role !== 'user' && role !== 'assistant')
        return { model, error: anthropicError(400, `messages.${i}.role: Input should be 'user' or 'assistant'`) };
    }
    return {
      model,
      value: {
        model,
        system: body.system,
        messages: body.messages,
        maxTokens: body.max_tokens,
        stream: body.stream === true,
      },
    };
  },
  answer(request) {
    const reply = chatReply({ system: request.system, messages: request.messages }, request.maxTokens);
    const inputTokens = tokensOf({ system: request.system, messages: request.messages });
    const stopReason = reply.truncated ? 'max_tokens' : 'end_turn';
    const id = messageId();
    const usage = (outputTokens: number) => ({
      input_tokens: inputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: outputTokens,
      service_tier: 'standard',
    });
    const message = (content: unknown[], stop: string | null, outputTokens: number) => ({
      id,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage: usage(outputTokens),
    });
    if (!request.stream)
      return json(200, message([{ type: 'text', text: reply.text }], stopReason, reply.outputTokens), requestHeaders());

    const event = (type: string, data: object): SseEvent => ({ event: type, data: { type, ...data } });
    const events: SseEvent[] = [
      event('message_start', { message: message([], null, 1) }),
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('ping', {}),
      ...reply.pieces.map((text) => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
      event('content_block_stop', { index: 0 }),
      event('message_delta', {
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: reply.outputTokens },
      }),
      event('message_stop', {}),
    ];
    return { kind: 'sse', status: 200, events, eol: '\n', headers: requestHeaders() };
  },
  errorReply: (status, message) => anthropicError(status, message),
  malformShape(body) {
    const b = body as Record<string, unknown>;
    // A message without content; stream events whose payload field is gone.
    if (b.type === 'message') return { ...b, content: undefined };
    if (b.type === 'message_start') return { ...b, message: undefined };
    if (b.type === 'content_block_delta') return { ...b, delta: undefined };
    if (b.type === 'message_delta') return { ...b, usage: undefined };
    return b;
  },
};
