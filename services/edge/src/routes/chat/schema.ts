// Request bodies of the chat and vendor-compatible routes. Only the fields the gateway itself reads are checked;
// every other field is the provider's business and is passed on untouched.
import { modelIdSchema } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import type { CatalogModel } from '@gensvc/upstream';
import { z } from 'zod';

const outputCap = z.number().int().min(1);

/** The model id a body names: looked up in Postgres, so no NUL or other control character. */
export const chatModelId = modelIdSchema('must be a string naming a chat model, "<provider>/<model>"');

/**
 * An output cap above what the model can produce is refused, as the vendors refuse it, rather than forwarded (or
 * quietly lowered): the caller learns the model's maximum and nothing is held or charged.
 */
export function checkOutputCap(model: CatalogModel, param: string, value: number | null | undefined): void {
  if (value === null || value === undefined || value <= model.maxOutputTokens) return;
  throw errors.invalidRequest(
    `${param}: ${value} is more than the model "${model.id}" can ` +
      `produce; its maximum is ${model.maxOutputTokens} output tokens.`,
    param,
  );
}

/** POST /api/v1/chat/completions, /v1/chat/completions (OpenAI). */
export const chatCompletionBody = z.looseObject({
  model: chatModelId,
  messages: z.array(z.unknown()).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: outputCap.nullish(),
  max_completion_tokens: outputCap.nullish(),
  n: z.number().int().min(1).max(128).nullish(),
});

/** POST /v1/messages (Anthropic): max_tokens is required, as Anthropic requires it. */
export const messageBody = z.looseObject({
  model: chatModelId,
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
