// The per-key model allow-list: a key limited to some models may call only those, and model discovery
// lists only those. Every paid route looks its model up through modelForKey, so the rule lives here once.
import type { AuthKey } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Catalog, CatalogModel } from '@gensvc/upstream';

type Limited = Pick<AuthKey, 'allowedModels'>;

/** Whether the key may use the model: an empty allow-list allows every model. */
export const keyMayUse = (key: Limited, modelId: string): boolean =>
  key.allowedModels.length === 0 || key.allowedModels.includes(modelId);

/**
 * The model a paid call names, read from the catalog, after 403 model_not_allowed for a model outside the key's
 * allow-list (checked first, without a read: the answer is the same whether such a model exists or not).
 */
export function modelForKey(
  catalog: Catalog,
  key: Limited,
  modelId: string,
  param = 'model',
): Promise<CatalogModel | null> {
  if (!keyMayUse(key, modelId)) throw errors.modelNotAllowed(modelId, param);
  return catalog.model(modelId);
}

/** The models the key may use that can serve calls now (Catalog.usableModels), by id. */
export async function modelsForKey(catalog: Catalog, key: Limited): Promise<CatalogModel[]> {
  return (await catalog.usableModels()).filter((m) => keyMayUse(key, m.id));
}
