import {
  channelRepository,
  isUniqueViolation,
  MODEL_ID,
  ModelKind,
  type ModelModel,
  modelRepository,
  toAmount,
  type UpdateModelInput,
  withTx,
} from '@gensvc/db';
import { z } from 'zod';
import { flagValues, UsageError } from '../args';
import { announceCatalogChange } from '../catalog-changes';
import type { Command } from '../command';
import { conflict, notFound } from '../failures';
import { amount, choice, choices, flagSwitch, integer, list } from '../flag-values';
import { fields, iso, table } from '../output';

/** A model with the names of the channels that serve it. */
function modelView(m: ModelModel, channels: string[]) {
  return {
    id: m.id,
    kind: m.kind,
    enabled: m.enabled,
    input_price: toAmount(m.inputPricePerMTok),
    output_price: toAmount(m.outputPricePerMTok),
    unit_price: toAmount(m.unitPrice),
    input_only: m.inputOnly,
    max_output_tokens: m.maxOutputTokens,
    channels,
    created_at: iso(m.createdAt),
  };
}

const add: Command = {
  words: ['model', 'add'],
  summary: 'Add a model and route it to channels.',
  flags: [
    { name: 'id', value: 'PROVIDER/MODEL', required: true, help: 'public model id, e.g. openai/gpt-4o' },
    { name: 'kind', value: choices(ModelKind), required: true, help: 'what the model does' },
    { name: 'input-price', value: 'USD', help: 'price per million input tokens' },
    { name: 'output-price', value: 'USD', help: 'price per million output tokens' },
    { name: 'unit-price', value: 'USD', help: 'price per generated image or second of video' },
    { name: 'input-only', help: 'charge input tokens only' },
    {
      name: 'max-output-tokens',
      value: 'N',
      help: 'upper bound on output tokens reserved before a call (default 4096)',
    },
    { name: 'channels', value: 'name1,name2', required: true, help: 'channels that serve the model' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        id: z.string().regex(MODEL_ID, 'must be <provider>/<model>, e.g. openai/gpt-4o'),
        kind: choice(ModelKind),
        'input-price': amount().optional(),
        'output-price': amount().optional(),
        'unit-price': amount().optional(),
        'input-only': flagSwitch,
        'max-output-tokens': integer(1, 10_000_000).optional(),
        channels: list,
      }),
      flags,
      add,
    );
    return async ({ db, out }) => {
      const duplicate = conflict('duplicate_model', `A model "${input.id}" already exists.`);
      const model = await withTx(db, async (tx) => {
        if (await modelRepository.get(tx, input.id)) throw duplicate;
        const routes: { channelId: string }[] = [];
        for (const name of input.channels) {
          const channel = await channelRepository.findByName(tx, name);
          if (!channel) throw notFound('channel', name);
          routes.push({ channelId: channel.id });
        }
        return modelRepository.create(tx, {
          id: input.id,
          kind: input.kind,
          inputOnly: input['input-only'],
          routes,
          ...(input['input-price'] !== undefined && { inputPricePerMTok: input['input-price'] }),
          ...(input['output-price'] !== undefined && { outputPricePerMTok: input['output-price'] }),
          ...(input['unit-price'] !== undefined && { unitPrice: input['unit-price'] }),
          ...(input['max-output-tokens'] !== undefined && { maxOutputTokens: input['max-output-tokens'] }),
        });
      }).catch((e) => {
        throw isUniqueViolation(e) ? duplicate : e;
      });
      const view = modelView(model, input.channels);
      out.result(view, () => fields(view));
    };
  },
};

const listModels: Command = {
  words: ['model', 'list'],
  summary: 'List models with their prices and channels.',
  flags: [],
  prepare() {
    return async ({ db, out }) => {
      const [models, channels] = await Promise.all([modelRepository.list(db), channelRepository.list(db)]);
      const names = new Map(channels.map((c) => [c.id, c.name]));
      const data = models.map((m) =>
        modelView(
          m,
          m.routes.map((r) => names.get(r.channelId) ?? r.channelId),
        ),
      );
      out.result({ object: 'list', data }, () =>
        table(data, ['id', 'kind', 'input_price', 'output_price', 'unit_price', 'input_only', 'channels', 'enabled']),
      );
    };
  },
};

const bool = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

const update: Command = {
  words: ['model', 'update'],
  summary:
    "Change a model's prices, channels or availability; every replica uses it at once (--enabled false: refused " +
    'everywhere within a second).',
  flags: [
    { name: 'id', value: 'PROVIDER/MODEL', required: true, help: 'model id' },
    { name: 'input-price', value: 'USD', help: 'price per million input tokens' },
    { name: 'output-price', value: 'USD', help: 'price per million output tokens' },
    { name: 'unit-price', value: 'USD', help: 'price per generated image or second of video' },
    { name: 'channels', value: 'name1,name2', help: "replaces the model's channels" },
    { name: 'enabled', value: 'true|false', help: 'whether callers may use the model' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        id: z.string().regex(MODEL_ID, 'must be <provider>/<model>, e.g. openai/gpt-4o'),
        'input-price': amount().optional(),
        'output-price': amount().optional(),
        'unit-price': amount().optional(),
        channels: list.optional(),
        enabled: bool.optional(),
      }),
      flags,
      update,
    );
    if (Object.keys(input).length === 1)
      throw new UsageError(
        'Nothing to change: give at least one of --input-price, --output-price, --unit-price, --channels, --enabled.',
        update,
      );
    return async (deps) => {
      const { db, out } = deps;
      const model = await withTx(db, async (tx) => {
        let routes: UpdateModelInput['routes'];
        if (input.channels) {
          routes = [];
          for (const name of input.channels) {
            const channel = await channelRepository.findByName(tx, name);
            if (!channel) throw notFound('channel', name);
            routes.push({ channelId: channel.id });
          }
        }
        return modelRepository.update(tx, input.id, {
          ...(input['input-price'] !== undefined && { inputPricePerMTok: input['input-price'] }),
          ...(input['output-price'] !== undefined && { outputPricePerMTok: input['output-price'] }),
          ...(input['unit-price'] !== undefined && { unitPrice: input['unit-price'] }),
          ...(input.enabled !== undefined && { enabled: input.enabled }),
          ...(routes && { routes }),
        });
      });
      if (!model) throw notFound('model', input.id);
      await announceCatalogChange(deps, { model: model.id });
      const names = new Map((await channelRepository.list(db)).map((c) => [c.id, c.name]));
      const view = modelView(
        model,
        model.routes.map((r) => names.get(r.channelId) ?? r.channelId),
      );
      out.result(view, () => fields(view));
    };
  },
};

const remove: Command = {
  words: ['model', 'remove'],
  summary: 'Remove a model (refused while generation tasks of it are queued or running: disable it first).',
  flags: [{ name: 'id', value: 'PROVIDER/MODEL', required: true, help: 'model id' }],
  prepare(flags) {
    const input = flagValues(z.object({ id: z.string().min(1) }), flags, remove);
    return async (deps) => {
      const removed = await modelRepository.remove(deps.db, input.id);
      if (!removed.ok && removed.reason === 'not_found') throw notFound('model', input.id);
      if (!removed.ok && removed.reason === 'in_use') {
        throw conflict(
          'model_in_use',
          `${removed.tasks} generation task(s) of ${input.id} are still queued or running; disable the model (model ` +
            `update --enabled false) and remove it once they finish.`,
        );
      }
      await announceCatalogChange(deps, { model: input.id });
      const view = { id: input.id, object: 'model', deleted: true };
      deps.out.result(view, () => `removed model ${input.id}`);
    };
  },
};

export const modelCommands: Command[] = [add, listModels, update, remove];
