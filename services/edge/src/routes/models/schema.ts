// Model discovery: the queries each vendor shape takes and the answers it gives, as zod schemas (the
// OpenAPI document is generated from these). gensvc's own fields ride under the `gensvc` key of every model.
import { z } from 'zod';

/** gensvc's fields on every listed model, whatever the vendor shape; prices in the workspace's currency. */
const MODEL_EXTENSION = z.object({
  kind: z.enum(['evaluation', 'chat', 'image', 'video']),
  currency: z.string().describe('ISO 4217 code: the workspace currency the prices are charged in'),
  prices: z.object({
    input_per_million_tokens: z.number(),
    output_per_million_tokens: z.number(),
    per_unit: z.number().describe('per generated image, or per second of video'),
  }),
  input_only: z.boolean().describe('charges input tokens only'),
  max_output_tokens: z.number().int(),
  /** The wire protocols its channels speak (openai, anthropic, gemini, evaluate, replicate, fal). */
  protocols: z.array(z.string()),
});

// OpenAI: GET /v1/models, /api/v1/models, /v1/models/{id} (bearer key).
export const OPENAI_MODEL = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int().describe('Unix seconds'),
  owned_by: z.string().describe('the provider part of the id'),
  gensvc: MODEL_EXTENSION,
});
export const OPENAI_MODEL_LIST = z.object({ object: z.literal('list'), data: z.array(OPENAI_MODEL) });
export const OPENAI_MODELS_QUERY = z.strictObject({});

// Anthropic: the same paths with an anthropic-version header (x-api-key or bearer key). Newest first.
const anthropicCursor = z.string().min(1).max(200);
export const ANTHROPIC_MODELS_QUERY = z
  .strictObject({
    limit: z.coerce
      .number()
      .int()
      .min(1, 'must be between 1 and 1000')
      .max(1000, 'must be between 1 and 1000')
      .default(20),
    after_id: anthropicCursor.optional(),
    before_id: anthropicCursor.optional(),
    /** Sent by the official SDK; every listed model is active. */
    lifecycle: z.string().max(50).optional(),
  })
  .refine((q) => q.after_id === undefined || q.before_id === undefined, {
    message: 'send after_id or before_id, not both',
    path: ['before_id'],
  });
export const ANTHROPIC_MODEL = z.object({
  type: z.literal('model'),
  id: z.string(),
  display_name: z.string(),
  created_at: z.string().describe('RFC 3339'),
  gensvc: MODEL_EXTENSION,
});
export const ANTHROPIC_MODEL_LIST = z.object({
  data: z.array(ANTHROPIC_MODEL),
  has_more: z.boolean(),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
});

// Google: GET /v1beta/models, /v1beta/models/{id} (x-goog-api-key, ?key= or bearer key).
export const GOOGLE_MODELS_QUERY = z.strictObject({
  pageSize: z.coerce
    .number()
    .int()
    .min(1, 'must be between 1 and 1000')
    .max(1000, 'must be between 1 and 1000')
    .default(50),
  pageToken: z.string().min(1).max(400).optional(),
  /** The key, as Google accepts it in the query (read by authentication). */
  key: z.string().optional(),
});
export const GOOGLE_MODEL_QUERY = z.strictObject({ key: z.string().optional() });
export const GOOGLE_MODEL = z.object({
  name: z.string().describe('models/<provider>/<model>'),
  baseModelId: z.string(),
  version: z.string(),
  displayName: z.string(),
  description: z.string(),
  outputTokenLimit: z.number().int(),
  supportedGenerationMethods: z.array(z.string()),
  gensvc: MODEL_EXTENSION,
});
export const GOOGLE_MODEL_LIST = z.object({ models: z.array(GOOGLE_MODEL), nextPageToken: z.string().optional() });

export type ModelExtension = z.output<typeof MODEL_EXTENSION>;
