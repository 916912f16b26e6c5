import type { DbClient } from '../client';
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
  get(db: DbClient, id: string) {
    return db.model.findUnique({ where: { id }, include: { routes: { include: { channel: true } } } });
  },
};
