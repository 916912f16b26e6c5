import { z } from 'zod';
import { KEY_AUTH, operation } from '../../openapi/operation';
import { GOOGLE_MODEL_PATH, MODEL_PATH } from './index';
import {
  ANTHROPIC_MODEL,
  ANTHROPIC_MODEL_LIST,
  ANTHROPIC_MODELS_QUERY,
  GOOGLE_MODEL,
  GOOGLE_MODEL_LIST,
  GOOGLE_MODEL_QUERY,
  GOOGLE_MODELS_QUERY,
  OPENAI_MODEL,
  OPENAI_MODEL_LIST,
} from './schema';

const DIALECT =
  "OpenAI's shape by default; Anthropic's (`x-api-key` or bearer, paged by " +
  "limit/after_id/before_id, errors in Anthropic's shape) when `anthropic-version` is sent.";
const anthropicVersion = z.object({
  'anthropic-version': z.string().optional().describe("Any value selects Anthropic's shape."),
});
const modelParam = z.object({
  model: z.string().describe('The model id, `<provider>/<model>` (the slash may be sent as %2F).'),
});

export const modelApi = [
  operation({
    method: 'get',
    route: ['/v1/models', '/api/v1/models'],
    operationId: 'listModels',
    summary: 'The models this key may call now',
    description:
      `${DIALECT} Only enabled models with a usable channel, within ` +
      `the key's allow-list; gensvc's fields under \`gensvc\`.`,
    tag: 'Models',
    auth: 'bearer',
    headers: anthropicVersion,
    query: ANTHROPIC_MODELS_QUERY,
    responses: {
      200: {
        description: 'The list (OpenAI or Anthropic shape).',
        schema: z.union([OPENAI_MODEL_LIST, ANTHROPIC_MODEL_LIST]),
      },
    },
    errors: [...KEY_AUTH, 'invalid_request'],
  }),
  operation({
    method: 'get',
    route: MODEL_PATH,
    paths: ['/v1/models/{model}', '/api/v1/models/{model}'],
    operationId: 'getModel',
    summary: 'One model this key may call',
    description: DIALECT,
    tag: 'Models',
    auth: 'bearer',
    params: modelParam,
    headers: anthropicVersion,
    responses: {
      200: { description: 'The model (OpenAI or Anthropic shape).', schema: z.union([OPENAI_MODEL, ANTHROPIC_MODEL]) },
    },
    errors: [...KEY_AUTH, 'model_not_found'],
  }),
  operation({
    method: 'get',
    route: '/v1beta/models',
    operationId: 'listGoogleModels',
    summary: "The models this key may call now, in Google's shape",
    tag: 'Models',
    auth: 'google',
    query: GOOGLE_MODELS_QUERY,
    responses: { 200: { description: 'The list.', schema: GOOGLE_MODEL_LIST } },
    errors: [...KEY_AUTH, 'invalid_request'],
  }),
  operation({
    method: 'get',
    route: GOOGLE_MODEL_PATH,
    paths: ['/v1beta/models/{model}'],
    operationId: 'getGoogleModel',
    summary: "One model this key may call, in Google's shape",
    tag: 'Models',
    auth: 'google',
    params: modelParam,
    query: GOOGLE_MODEL_QUERY,
    responses: { 200: { description: 'The model.', schema: GOOGLE_MODEL } },
    errors: [...KEY_AUTH, 'model_not_found'],
  }),
];
