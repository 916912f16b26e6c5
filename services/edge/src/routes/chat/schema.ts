// Request bodies of the chat and vendor-compatible routes. Only the fields the gateway itself reads are checked;
// every other field is the provider's business and is passed on untouched.
import { errors } from '@gensvc/errors';
import { z } from 'zod';

const outputCap = z.number().int().min(1);

/** POST /api/v1/chat/completions, /v1/chat/completions (OpenAI). */
export const chatCompletionBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.unknown()).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: outputCap.nullish(),
  max_completion_tokens: outputCap.nullish(),
  n: z.number().int().min(1).max(128).nullish(),
});

/** POST /v1/messages (Anthropic): max_tokens is required, as Anthropic requires it. */
export const messageBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.unknown()).min(1),
  max_tokens: outputCap,
  stream: z.boolean().nullish(),
});

/** POST /v1beta/models/{model}:generateContent and :streamGenerateContent (Gemini); the model is in the path. */
export const generateContentBody = z.looseObject({
  contents: z.array(z.unknown()).min(1),
  generationConfig: z
    .looseObject({
      maxOutputTokens: outputCap.nullish(),
      candidateCount: z.number().int().min(1).max(8).nullish(),
    })
    .nullish(),
});

/** The body checked against `schema`, or 400 invalid_request naming the first field at fault. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw errors.invalidRequest('The request body must be a JSON object sent with Content-Type: application/json.');
  }
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const param = issue.path.map(String).join('.') || null;
  throw errors.invalidRequest(param ? `${param}: ${issue.message}` : issue.message, param);
}
