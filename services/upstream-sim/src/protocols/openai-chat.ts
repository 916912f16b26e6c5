// OpenAI POST /v1/chat/completions: a chat.completion JSON answer, or with stream: true the SSE stream of
// chat.completion.chunk objects (role first, content deltas, finish_reason, the usage chunk when
// stream_options.include_usage is set) closed by `data: [DONE]`.
import { randomBytes } from 'node:crypto';
import { chatReply, tokensOf } from '../deterministic';
import { bearer, isPositiveInt, jsonObject, type Protocol } from '../protocol';
import { json, type SseEvent } from '../reply';
import { BAD_JSON, missingParam, NO_KEY, openAiError, requestId } from './openai-errors';

interface ChatRequest {
  model: string;
  messages: unknown[];
  maxTokens?: number;
  stream: boolean;
  includeUsage: boolean;
}

const headers = () => ({ 'x-request-id': requestId(), 'openai-processing-ms': '1', 'openai-version': '2020-10-01' });

export const openAiChatProtocol: Protocol<ChatRequest> = {
  name: 'openai-chat',
  matches: (method, path) => method === 'POST' && path === '/v1/chat/completions',
  parse(r) {
    const body = jsonObject(r.body);
    const model = typeof body?.model === 'string' ? body.model : undefined;
    if (!bearer(r.req)) return { model, error: openAiError(401, NO_KEY, null, null) };
    if (!body) return { model, error: openAiError(400, BAD_JSON) };
    if (!model) return { model, error: openAiError(400, 'you must provide a model parameter') };
    if (body.messages === undefined) return { model, error: missingParam('messages') };
    if (!Array.isArray(body.messages))
      return {
        model,
        error: openAiError(
          400,
          "Invalid type for 'messages': expected an array of objects.",
          'messages',
          'invalid_type',
        ),
      };
    if (body.messages.length === 0) {
      return {
        model,
        error: openAiError(
          400,
          "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          'messages',
          'empty_array',
        ),
      };
    }
    const badMessage = body.messages.findIndex(
      (m) => m === null || typeof m !== 'object' || typeof (m as { role?: unknown }).role !== 'string',
    );
    if (badMessage >= 0) return { model, error: missingParam(`messages[${badMessage}].role`) };
    let maxTokens: number | undefined;
    for (const name of ['max_completion_tokens', 'max_tokens'] as const) {
      const v = body[name];
      if (v === undefined || v === null) continue;
      if (!isPositiveInt(v)) {
        return {
          model,
          error: openAiError(
            400,
            `Invalid '${name}': integer below minimum value. Expected a value >= 1, but got ${JSON.stringify(v)} ` +
              `instead.`,
            name,
            'integer_below_min_value',
          ),
        };
      }
      maxTokens = maxTokens === undefined ? v : Math.min(maxTokens, v);
    }
    const options = body.stream_options as { include_usage?: unknown } | undefined | null;
    if (options != null && body.stream !== true) {
      return {
        model,
        error: openAiError(
          400,
          "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
          'stream_options',
          null,
        ),
      };
    }
    return {
      model,
      value: {
        model,
        messages: body.messages,
        maxTokens,
        stream: body.stream === true,
        includeUsage: options?.include_usage === true,
      },
    };
  },
  answer(request) {
    const reply = chatReply(request.messages, request.maxTokens);
    const promptTokens = tokensOf(request.messages);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: reply.outputTokens,
      total_tokens: promptTokens + reply.outputTokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    const id = `chatcmpl-${randomBytes(15).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const finishReason = reply.truncated ? 'length' : 'stop';
    if (!request.stream) {
      return json(
        200,
        {
          id,
          object: 'chat.completion',
          created,
          model: request.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.text, refusal: null, annotations: [] },
              logprobs: null,
              finish_reason: finishReason,
            },
          ],
          usage,
          service_tier: 'default',
          system_fingerprint: 'fp_upstream_sim',
        },
        headers(),
      );
    }
    const chunk = (delta: object, finish: string | null): SseEvent => ({
      data: {
        id,
        object: 'chat.completion.chunk',
        created,
        model: request.model,
        service_tier: 'default',
        system_fingerprint: 'fp_upstream_sim',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(request.includeUsage ? { usage: null } : {}),
      },
    });
    const events: SseEvent[] = [chunk({ role: 'assistant', content: '', refusal: null }, null)];
    for (const piece of reply.pieces) events.push(chunk({ content: piece }, null));
    events.push(chunk({}, finishReason));
    if (request.includeUsage) {
      events.push({
        data: {
          id,
          object: 'chat.completion.chunk',
          created,
          model: request.model,
          service_tier: 'default',
          system_fingerprint: 'fp_upstream_sim',
          choices: [],
          usage,
        },
      });
    }
    events.push({ data: '[DONE]', raw: true });
    return { kind: 'sse', status: 200, events, eol: '\n', headers: headers() };
  },
  errorReply: (status, message) => openAiError(status, message),
  malformShape: (body) => ({ ...(body as object), choices: undefined }),
};
