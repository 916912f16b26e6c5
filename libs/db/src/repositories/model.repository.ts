import { withTx, type DbClient } from '../client';
import type { ModelKind } from '../generated/prisma/enums';

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

export const modelRepository = {
  create(db: DbClient, input: CreateModelInput) {
    const { routes = [], ...model } = input;
    return db.model.create({
      data: { ...model, routes: { create: routes.map((r) => ({ channelId: r.channelId, upstreamModel: r.upstreamModel ?? null })) } },
      include: { routes: true },
    });
  },
  list(db: DbClient) {
    return db.model.findMany({ orderBy: { id: 'asc' }, include: { routes: true } });
  },
  /** Every model with its routes and their channels (the catalog's list; model discovery), by id. */
  listWithChannels(db: DbClient) {
    return db.model.findMany({ orderBy: { id: 'asc' }, include: { routes: { include: { channel: true } } } });
  },
  /** Those of `ids` that name no model (a key's allow-list is checked against these). */
  async missing(db: DbClient, ids: readonly string[]): Promise<string[]> {
    const found = new Set((await db.model.findMany({ where: { id: { in: [...ids] } }, select: { id: true } })).map((m) => m.id));
    return ids.filter((id) => !found.has(id));
  },
  get(db: DbClient, id: string) {
    return db.model.findUnique({ where: { id }, include: { routes: { include: { channel: true } } } });
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
        const existing = new Set((await tx.modelRoute.findMany({ where: { modelId: id }, select: { channelId: true } })).map((r) => r.channelId));
        const added = routes.filter((r) => !existing.has(r.channelId));
        if (added.length) await tx.modelRoute.createMany({ data: added.map((r) => ({ modelId: id, channelId: r.channelId, upstreamModel: r.upstreamModel ?? null })) });
      }
      return tx.model.findUnique({ where: { id }, include: { routes: true } });
    });
  },
  /** Removes the model, unless generation tasks of it are still queued or running (`in_use`: disable it first). */
  remove(db: DbClient, id: string): Promise<{ ok: true } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'in_use'; tasks: number }> {
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

export type UpdateModelInput = Partial<Pick<CreateModelInput, 'inputPricePerMTok' | 'outputPricePerMTok' | 'unitPrice' | 'routes'>> & { enabled?: boolean };
