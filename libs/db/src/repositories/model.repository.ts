import { queryPrepared, withTx, type DbClient } from '../client';
import type { Channel, Model, ModelRoute } from '../generated/prisma/client';
import type { ModelKind } from '../generated/prisma/enums';
import { CHANNEL_COLUMNS, channelOf, type RawChannelRow } from './channel.repository';

export interface CreateModelInput {
  id: string;
  kind: ModelKind;
  inputPricePerMTok?: bigint;
  outputPricePerMTok?: bigint;
  unitPrice?: bigint;
  inputOnly?: boolean;
  maxOutputTokens?: number;
  /** Channels that serve the model, with the provider's name for it when that differs. */
  routes?: { channelId: string; upstreamModel?: string | null }[];
}

export const MODEL_ID = /^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** A model with its routes, each with its channel: what the catalog serves calls from. */
export type ModelWithChannels = Model & { routes: (ModelRoute & { channel: Channel })[] };

// The catalog's reads (a model on a miss, every model for discovery) are the only model reads of an edge serving
// paid calls: prepared statements on the pg pool, so that Prisma's query compiler (tens of MiB of WASM,
// instantiated at a client's first query) is never loaded by such an edge. One row per route (a model without routes:
// one row, its route columns null), grouped here; the channel's columns are prefixed `c_` (channel.repository.ts).
// Routes come by their channel's priority, then age, as channelRepository.list orders channels.
const MODEL_ROUTES = (where: string) => `
  SELECT m.id, m.kind::text AS kind, m.enabled, m."inputPricePerMTok"::text AS "inputPricePerMTok",
         m."outputPricePerMTok"::text AS "outputPricePerMTok", m."unitPrice"::text AS "unitPrice", m."inputOnly",
         m."maxOutputTokens", m."createdAt" AT TIME ZONE 'UTC' AS "createdAt", r."channelId", r."upstreamModel",
         ${CHANNEL_COLUMNS}
  FROM "Model" m
  LEFT JOIN "ModelRoute" r ON r."modelId" = m.id
  LEFT JOIN "Channel" c ON c.id = r."channelId"
  ${where}
  ORDER BY m.id, c.priority DESC, c."createdAt", c.id`;
const MODEL_BY_ID = MODEL_ROUTES('WHERE m.id = $1');
const EVERY_MODEL = MODEL_ROUTES('');

type RawModelRouteRow = Omit<Model, 'inputPricePerMTok' | 'outputPricePerMTok' | 'unitPrice'> & {
  inputPricePerMTok: string;
  outputPricePerMTok: string;
  unitPrice: string;
  channelId: string | null;
  upstreamModel: string | null;
} & RawChannelRow;

/** Rows of MODEL_ROUTES (in model order) as Prisma's include of routes and their channels reads them. */
function modelsOf(rows: RawModelRouteRow[]): ModelWithChannels[] {
  const models: ModelWithChannels[] = [];
  for (const row of rows) {
    let model = models.at(-1);
    if (model?.id !== row.id) {
      const { id, kind, enabled, inputOnly, maxOutputTokens, createdAt } = row;
      model = {
        id,
        kind,
        enabled,
        inputOnly,
        maxOutputTokens,
        createdAt,
        inputPricePerMTok: BigInt(row.inputPricePerMTok),
        outputPricePerMTok: BigInt(row.outputPricePerMTok),
        unitPrice: BigInt(row.unitPrice),
        routes: [],
      };
      models.push(model);
    }
    if (row.channelId !== null)
      model.routes.push({
        modelId: row.id,
        channelId: row.channelId,
        upstreamModel: row.upstreamModel,
        channel: channelOf(row),
      });
  }
  return models;
}

export const modelRepository = {
  create(db: DbClient, input: CreateModelInput) {
    const { routes = [], ...model } = input;
    return db.model.create({
      data: {
        ...model,
        routes: { create: routes.map((r) => ({ channelId: r.channelId, upstreamModel: r.upstreamModel ?? null })) },
      },
      include: { routes: true },
    });
  },
  list(db: DbClient) {
    return db.model.findMany({ orderBy: { id: 'asc' }, include: { routes: true } });
  },
  /** Every model with its routes and their channels (the catalog's list; model discovery), by id. */
  async listWithChannels(db: DbClient): Promise<ModelWithChannels[]> {
    return modelsOf(await queryPrepared<RawModelRouteRow>(db, 'gensvc_models', EVERY_MODEL, []));
  },
  /** Those of `ids` that name no model (a key's allow-list is checked against these). */
  async missing(db: DbClient, ids: readonly string[]): Promise<string[]> {
    const found = new Set(
      (await db.model.findMany({ where: { id: { in: [...ids] } }, select: { id: true } })).map((m) => m.id),
    );
    return ids.filter((id) => !found.has(id));
  },
  async get(db: DbClient, id: string): Promise<ModelWithChannels | null> {
    return modelsOf(await queryPrepared<RawModelRouteRow>(db, 'gensvc_model', MODEL_BY_ID, [id]))[0] ?? null;
  },
  /**
   * Changes the given fields; `routes`, when given, replaces the model's channels (routes to channels kept keep their
   * upstreamModel). Null when there is no such model.
   */
  update(db: DbClient, id: string, patch: UpdateModelInput) {
    const { routes, ...fields } = patch;
    return withTx(db, async (tx) => {
      const { count } = await tx.model.updateMany({ where: { id }, data: fields });
      if (!count) return null;
      if (routes) {
        const keep = routes.map((r) => r.channelId);
        await tx.modelRoute.deleteMany({ where: { modelId: id, channelId: { notIn: keep } } });
        const existing = new Set(
          (await tx.modelRoute.findMany({ where: { modelId: id }, select: { channelId: true } })).map(
            (r) => r.channelId,
          ),
        );
        const added = routes.filter((r) => !existing.has(r.channelId));
        if (added.length)
          await tx.modelRoute.createMany({
            data: added.map((r) => ({ modelId: id, channelId: r.channelId, upstreamModel: r.upstreamModel ?? null })),
          });
      }
      return tx.model.findUnique({ where: { id }, include: { routes: true } });
    });
  },
  /** Removes the model, unless generation tasks of it are still queued or running (`in_use`: disable it first). */
  remove(
    db: DbClient,
    id: string,
  ): Promise<{ ok: true } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'in_use'; tasks: number }> {
    return withTx(db, async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM "Model" WHERE id = ${id} FOR UPDATE`;
      if (!locked.length) return { ok: false, reason: 'not_found' };
      const tasks = await tx.task.count({ where: { model: id, status: { in: ['queued', 'running'] } } });
      if (tasks) return { ok: false, reason: 'in_use', tasks };
      await tx.model.delete({ where: { id } });
      return { ok: true };
    });
  },
};

export type UpdateModelInput = Partial<
  Pick<CreateModelInput, 'inputPricePerMTok' | 'outputPricePerMTok' | 'unitPrice' | 'routes'>
> & { enabled?: boolean };
