// Model discovery in each vendor's shape: the enabled models the caller's key may use (modelsForKey:
// the catalog's usable models, the same source and rules as every paid call), with gensvc's fields under `gensvc`.
import { toAmount } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { CatalogModel } from '@gensvc/upstream';
import type { Request, RequestHandler, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { parseFields } from '../../http/parse-body';
import { locals } from '../../http/request-context';
import { keyMayUse, modelsForKey } from '../../models/key-models';
import {
  ANTHROPIC_MODELS_QUERY,
  GOOGLE_MODEL_QUERY,
  GOOGLE_MODELS_QUERY,
  OPENAI_MODELS_QUERY,
  type ModelExtension,
} from './schema';

type Deps = Pick<EdgeDeps, 'catalog'>;

function extension(m: CatalogModel, currency: string): ModelExtension {
  return {
    kind: m.kind,
    currency,
    prices: {
      input_per_million_tokens: toAmount(m.inputPricePerMTok),
      output_per_million_tokens: toAmount(m.outputPricePerMTok),
      per_unit: toAmount(m.unitPrice),
    },
    input_only: m.inputOnly,
    max_output_tokens: m.maxOutputTokens,
    protocols: [...new Set(m.routes.filter((r) => r.channel.enabled).map((r) => r.channel.kind))].sort(),
  };
}

/** Whether a request to /v1/models speaks Anthropic's dialect: the header Anthropic's clients always send. */
const isAnthropicListing = (req: Request) => req.get('anthropic-version') !== undefined;

/** The key's model by the path's id, or 404 for one that is unknown, not usable now, or not the key's to use. */
async function visibleModel(deps: Deps, res: Response, id: string): Promise<CatalogModel> {
  const { key } = authOf(res);
  const model = keyMayUse(key, id) ? (await modelsForKey(deps.catalog, key)).find((m) => m.id === id) : undefined;
  if (!model) throw errors.modelNotFound(id);
  return model;
}

/** The path's model id: `/v1/models/<provider>/<model>` (a literal slash) or its encoded form (`%2F`, as SDKs send). */
const modelIdParam = (req: Request) => String((req.params as Record<string, string>)[0] ?? '').replace(/^models\//, '');

// --- OpenAI -------------------------------------------------------------------------------------------------------

const openAiModel = (m: CatalogModel, currency: string) => ({
  id: m.id,
  object: 'model' as const,
  created: Math.floor(m.createdAt.getTime() / 1000),
  owned_by: m.id.slice(0, m.id.indexOf('/')),
  gensvc: extension(m, currency),
});

/** GET /v1/models, /api/v1/models — every model at once, by id (OpenAI does not page it). */
export function listOpenAiModels(deps: Deps) {
  return async (req: Request, res: Response) => {
    parseFields(OPENAI_MODELS_QUERY, req.query);
    const { key, workspace } = authOf(res);
    const models = await modelsForKey(deps.catalog, key);
    res.json({ object: 'list', data: models.map((m) => openAiModel(m, workspace.currency)) });
  };
}

/** GET /v1/models/{id} */
export function getOpenAiModel(deps: Deps) {
  return async (req: Request, res: Response) => {
    const model = await visibleModel(deps, res, modelIdParam(req));
    res.json(openAiModel(model, authOf(res).workspace.currency));
  };
}

// --- Anthropic ----------------------------------------------------------------------------------------------------

const anthropicModel = (m: CatalogModel, currency: string) => ({
  type: 'model' as const,
  id: m.id,
  display_name: m.id,
  created_at: m.createdAt.toISOString(),
  gensvc: extension(m, currency),
});

/** Anthropic's order: the most recent first (ties by id, so pages are stable). */
const newestFirst = (a: CatalogModel, b: CatalogModel) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * GET /v1/models with anthropic-version — pages as Anthropic documents them: `limit` (1–1000, default 20) items
 * right after `after_id`, or right before `before_id`, in list order; `has_more` says whether more lie beyond the
 * page in the direction of paging. A cursor naming no listed model is a 400 naming it.
 */
export function listAnthropicModels(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(ANTHROPIC_MODELS_QUERY, req.query);
    const { key, workspace } = authOf(res);
    const models = (await modelsForKey(deps.catalog, key)).sort(newestFirst);
    const at = (param: 'after_id' | 'before_id', id: string) => {
      const i = models.findIndex((m) => m.id === id);
      if (i < 0) throw errors.invalidRequest(`${param}: no listed model has the id "${id}".`, param);
      return i;
    };
    let page: CatalogModel[];
    let hasMore: boolean;
    if (q.before_id !== undefined) {
      const end = at('before_id', q.before_id);
      const start = Math.max(0, end - q.limit);
      page = models.slice(start, end);
      hasMore = start > 0;
    } else {
      const start = q.after_id !== undefined ? at('after_id', q.after_id) + 1 : 0;
      page = models.slice(start, start + q.limit);
      hasMore = start + q.limit < models.length;
    }
    res.json({
      data: page.map((m) => anthropicModel(m, workspace.currency)),
      has_more: hasMore,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
    });
  };
}

/** GET /v1/models/{id} with anthropic-version */
export function getAnthropicModel(deps: Deps) {
  return async (req: Request, res: Response) => {
    const model = await visibleModel(deps, res, modelIdParam(req));
    res.json(anthropicModel(model, authOf(res).workspace.currency));
  };
}

/**
 * Answers /v1/models requests that carry anthropic-version in Anthropic's shape (its key headers, its errors) with
 * `handler` after `auth`; the others go on to the OpenAI handlers.
 */
export function anthropicDialect(
  auth: RequestHandler,
  handler: (req: Request, res: Response) => Promise<void>,
): RequestHandler {
  return (req, res, next) => {
    if (!isAnthropicListing(req)) return next();
    locals(res).errorStyle = 'anthropic';
    void auth(req, res, (err?: unknown) => {
      if (err) return next(err);
      handler(req, res).catch(next);
    });
  };
}

// --- Google -------------------------------------------------------------------------------------------------------

/** The methods of the Gemini routes a model answers: only over a Gemini channel. */
const googleMethods = (m: CatalogModel) =>
  m.kind === 'chat' && m.routes.some((r) => r.channel.enabled && r.channel.kind === 'gemini')
    ? ['generateContent', 'streamGenerateContent']
    : [];

const googleModel = (m: CatalogModel, currency: string) => ({
  name: `models/${m.id}`,
  baseModelId: m.id,
  version: '1',
  displayName: m.id,
  description: `${m.kind} model served by gensvc`,
  outputTokenLimit: m.maxOutputTokens,
  supportedGenerationMethods: googleMethods(m),
  gensvc: extension(m, currency),
});

const pageToken = (id: string) => Buffer.from(id, 'utf8').toString('base64url');

/** GET /v1beta/models — by id, `pageSize` (1–1000, default 50) at a time, `nextPageToken` while more remain. */
export function listGoogleModels(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(GOOGLE_MODELS_QUERY, req.query);
    const { key, workspace } = authOf(res);
    const models = await modelsForKey(deps.catalog, key);
    let start = 0;
    if (q.pageToken !== undefined) {
      const after = Buffer.from(q.pageToken, 'base64url').toString('utf8');
      if (pageToken(after) !== q.pageToken)
        throw errors.invalidRequest('pageToken: is not a token this list gave.', 'pageToken');
      start = models.findIndex((m) => m.id > after);
      if (start < 0) start = models.length;
    }
    const page = models.slice(start, start + q.pageSize);
    const more = start + q.pageSize < models.length;
    res.json({
      models: page.map((m) => googleModel(m, workspace.currency)),
      ...(more ? { nextPageToken: pageToken(page.at(-1)!.id) } : {}),
    });
  };
}

/** GET /v1beta/models/{id} */
export function getGoogleModel(deps: Deps) {
  return async (req: Request, res: Response) => {
    parseFields(GOOGLE_MODEL_QUERY, req.query);
    const model = await visibleModel(deps, res, modelIdParam(req));
    res.json(googleModel(model, authOf(res).workspace.currency));
  };
}
