import express from 'express';
import { authenticate } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import {
  anthropicDialect,
  getAnthropicModel,
  getGoogleModel,
  getOpenAiModel,
  listAnthropicModels,
  listGoogleModels,
  listOpenAiModels,
} from './list-models';

/** `/v1/models/<provider>/<model>` (model ids hold a slash; SDKs send it encoded, `%2F`, which matches too). */
export const MODEL_PATH = /^\/(?:api\/)?v1\/models\/(.+)$/;
export const GOOGLE_MODEL_PATH = /^\/v1beta\/models\/(.+)$/;

/**
 * Model discovery. No scope and no rate limit: any working key may learn what it can call (as with the
 * vendors). `/v1/models` answers Anthropic's shape when anthropic-version is sent, OpenAI's otherwise.
 */
export function modelRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const anthropic = authenticate(deps, 'anthropic');
  const bearer = authenticate(deps, 'bearer');
  router.get(
    ['/v1/models', '/api/v1/models'],
    anthropicDialect(anthropic, listAnthropicModels(deps)),
    bearer,
    listOpenAiModels(deps),
  );
  router.get(MODEL_PATH, anthropicDialect(anthropic, getAnthropicModel(deps)), bearer, getOpenAiModel(deps));
  router.get('/v1beta/models', authenticate(deps, 'google'), listGoogleModels(deps));
  router.get(GOOGLE_MODEL_PATH, authenticate(deps, 'google'), getGoogleModel(deps));
  return router;
}
