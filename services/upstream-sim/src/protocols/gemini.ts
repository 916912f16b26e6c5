// Google Gemini POST /v1beta/models/{model}:generateContent and :streamGenerateContent. The key comes in
// x-goog-api-key, ?key= or an OAuth-style bearer. Streams are SSE (`data: {...}\r\n\r\n`) with ?alt=sse and a
// JSON array written item by item without it, as Google does.
import { randomBytes } from 'node:crypto';
import { chatReply, tokensOf } from '../deterministic';
import { bearer, isPositiveInt, jsonObject, type Protocol } from '../protocol';
import { json, type Reply } from '../reply';

interface GeminiRequest {
  model: string;
  systemInstruction?: unknown;
  contents: unknown[];
  maxOutputTokens?: number;
  stream: boolean;
  sse: boolean;
}

const PATH = /^\/(?:v1|v1beta|v1alpha)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function googleError(status: number, message?: string): Reply {
  const name = STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  return json(status, { error: { code: status, message: message ?? `simulated ${name}`, status: name } });
}

function modelOf(path: string): string | undefined {
  const m = PATH.exec(path);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1];
  }
}

export const geminiProtocol: Protocol<GeminiRequest> = {
  name: 'gemini',
  matches: (method, path) => method === 'POST' && PATH.test(path),
  parse(r) {
    const model = modelOf(r.path);
    const key = r.req.headers['x-goog-api-key'] || r.query.get('key') || bearer(r.req);
    if (!key) {
      return {
        model,
        error: googleError(
          403,
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or " +
            'other form of API consumer identity to call this API.',
        ),
      };
    }
    const body = jsonObject(r.body);
    if (!body) return { model, error: googleError(400, 'Invalid JSON payload received. Expected an object.') };
    if (!Array.isArray(body.contents) || body.contents.length === 0) {
      return { model, error: googleError(400, '* GenerateContentRequest.contents: contents is not specified\n') };
    }
    const config = body.generationConfig as { maxOutputTokens?: unknown } | undefined;
    const max = config?.maxOutputTokens;
    if (max !== undefined && !isPositiveInt(max)) {
      return {
        model,
        error: googleError(
          400,
          `Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), ${JSON.stringify(max)}`,
        ),
      };
    }
    return {
      model,
      value: {
        model: model!,
        systemInstruction: body.systemInstruction,
        contents: body.contents,
        maxOutputTokens: max as number | undefined,
        stream: PATH.exec(r.path)![2] === 'streamGenerateContent',
        sse: r.query.get('alt') === 'sse',
      },
    };
  },
  answer(request) {
    const conversation = { systemInstruction: request.systemInstruction, contents: request.contents };
    const reply = chatReply(conversation, request.maxOutputTokens);
    const promptTokenCount = tokensOf(conversation);
    const responseId = randomBytes(12).toString('base64url');
    const finishReason = reply.truncated ? 'MAX_TOKENS' : 'STOP';
    const usage = (candidates: number) => ({
      promptTokenCount,
      candidatesTokenCount: candidates,
      totalTokenCount: promptTokenCount + candidates,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokenCount }],
    });
    const response = (text: string, finish: string | undefined, candidates: number) => ({
      candidates: [
        { content: { parts: [{ text }], role: 'model' }, ...(finish ? { finishReason: finish } : {}), index: 0 },
      ],
      usageMetadata: usage(candidates),
      modelVersion: request.model,
      responseId,
    });
    if (!request.stream) return json(200, response(reply.text, finishReason, reply.outputTokens));
    // Each item carries one token; usage counts are cumulative and the last item carries the finish reason.
    const items = reply.pieces.map((piece, i) =>
      response(piece, i === reply.pieces.length - 1 ? finishReason : undefined, i + 1),
    );
    if (items.length === 0) items.push(response('', finishReason, 0));
    if (request.sse) return { kind: 'sse', status: 200, events: items.map((data) => ({ data })), eol: '\r\n' };
    return { kind: 'json-stream', status: 200, items };
  },
  errorReply: (status, message) => googleError(status, message),
  malformShape: (body) => ({ ...(body as object), candidates: undefined }),
};
