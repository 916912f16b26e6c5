import type { AuthKey, ChannelKind } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Catalog, CatalogModel, CatalogRoute } from '@gensvc/upstream';
import { modelForKey } from '../models/key-models';
import type { ChatProtocol } from './protocol';

const PROTOCOL_NAMES: Partial<Record<ChannelKind, string>> = {
  openai: 'OpenAI chat completions (/api/v1/chat/completions, /v1/chat/completions) and Responses (/v1/responses)',
  anthropic: 'Anthropic messages (/v1/messages)',
  gemini: 'Gemini generateContent (/v1beta/models/{model}:generateContent)',
};

/**
 * The chat model a caller named (403 when the key may not use it) and its channels that speak the route's protocol: 404
 * for an unknown or disabled model, 400 model_not_supported for a model that is not a chat model (spec §7: chat rejects
 * evaluation models) or has no channel of this protocol. Requests are not translated between protocols.
 */
export class ChatModels {
  constructor(private readonly catalog: Catalog) {}

  async resolve(
    key: Pick<AuthKey, 'allowedModels'>,
    id: string,
    protocol: ChatProtocol,
  ): Promise<{ model: CatalogModel; routes: CatalogRoute[] }> {
    const model = await modelForKey(this.catalog, key, id);
    if (!model?.enabled) throw errors.modelNotFound(id);
    if (model.kind !== 'chat') {
      throw errors.modelNotSupported(
        model.kind === 'evaluation'
          ? `"${id}" is an evaluation model, not a language model: use POST /api/v1/evaluate.`
          : `"${id}" is a${model.kind === 'image' ? 'n image' : ` ${model.kind}`} generation model, not a chat model.`,
      );
    }
    const routes = model.routes.filter((r) => r.channel.kind === protocol.kind);
    if (routes.length === 0) {
      const elsewhere = [...new Set(model.routes.map((r) => r.channel.kind))].flatMap((k) => PROTOCOL_NAMES[k] ?? []);
      throw errors.modelNotSupported(
        `"${id}" is not served over the ${protocol.label} ` +
          `protocol${elsewhere.length ? `; it is available on: ${elsewhere.join('; ')}` : ''}. ` +
          `Requests are not translated between protocols.`,
      );
    }
    return { model, routes };
  }
}
