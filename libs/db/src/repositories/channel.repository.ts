import { queryPrepared, withTx, type DbClient } from '../client';
import type { Channel } from '../generated/prisma/client';
import type { ChannelKind } from '../generated/prisma/enums';
import { newId } from '../ids';

export interface CreateChannelInput {
  name: string;
  kind: ChannelKind;
  baseUrl: string;
  secret?: string;
  evaluatePath?: string;
  priority?: number;
  weight?: number;
  timeoutMs?: number;
  enabled?: boolean;
}

/**
 * A channel's columns prefixed `c_` (alias `c`), for the catalog's prepared reads here and in model.repository.ts
 * (a task's polls read their channel; a paid call its model's channels): no Prisma on an edge serving paid calls.
 */
export const CHANNEL_COLUMNS = `c.id AS c_id, c.name AS c_name, c.kind::text AS c_kind, c."baseUrl" AS "c_baseUrl",
  c.secret AS c_secret,
  c."evaluatePath" AS "c_evaluatePath", c.priority AS c_priority, c.weight AS c_weight, c.enabled AS c_enabled,
  c."timeoutMs" AS "c_timeoutMs", c."createdAt" AT TIME ZONE 'UTC' AS "c_createdAt"`;

export type RawChannelRow = { [K in keyof Channel as `c_${K}`]: Channel[K] };

export const channelOf = (row: RawChannelRow): Channel => ({
  id: row.c_id,
  name: row.c_name,
  kind: row.c_kind,
  baseUrl: row.c_baseUrl,
  secret: row.c_secret,
  evaluatePath: row.c_evaluatePath,
  priority: row.c_priority,
  weight: row.c_weight,
  enabled: row.c_enabled,
  timeoutMs: row.c_timeoutMs,
  createdAt: row.c_createdAt,
});

const CHANNEL_BY_ID = `SELECT ${CHANNEL_COLUMNS} FROM "Channel" c WHERE c.id = $1`;

export const channelRepository = {
  create(db: DbClient, input: CreateChannelInput) {
    return db.channel.create({ data: { id: newId('ch'), ...input } });
  },
  list(db: DbClient) {
    return db.channel.findMany({ orderBy: [{ priority: 'desc' }, { createdAt: 'asc' }] });
  },
  findByName(db: DbClient, name: string) {
    return db.channel.findUnique({ where: { name } });
  },
  async get(db: DbClient, id: string): Promise<Channel | null> {
    const [row] = await queryPrepared<RawChannelRow>(db, 'gensvc_channel', CHANNEL_BY_ID, [id]);
    return row ? channelOf(row) : null;
  },
  /** One model route to the channel (the first by model id), for a test call naming a model it serves. */
  firstRoute(db: DbClient, channelId: string) {
    return db.modelRoute.findFirst({ where: { channelId }, orderBy: { modelId: 'asc' } });
  },
  /** Changes the given fields; null when there is no such channel. */
  async update(db: DbClient, id: string, patch: UpdateChannelInput) {
    const { count } = await db.channel.updateMany({ where: { id }, data: patch });
    return count ? db.channel.findUnique({ where: { id } }) : null;
  },
  /**
   * Removes the channel and its model routes, unless a generation task still in flight was submitted to it (its
   * polls and cancel go to that channel): then `in_use` with how many; disabling it stops new work meanwhile.
   */
  remove(
    db: DbClient,
    id: string,
  ): Promise<{ ok: true } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'in_use'; tasks: number }> {
    return withTx(db, async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM "Channel" WHERE id = ${id} FOR UPDATE`;
      if (!locked.length) return { ok: false, reason: 'not_found' };
      const tasks = await tx.task.count({ where: { channelId: id, status: { in: ['queued', 'running'] } } });
      if (tasks) return { ok: false, reason: 'in_use', tasks };
      await tx.channel.delete({ where: { id } });
      return { ok: true };
    });
  },
};

export type UpdateChannelInput = Partial<
  Pick<CreateChannelInput, 'baseUrl' | 'secret' | 'evaluatePath' | 'priority' | 'weight' | 'timeoutMs' | 'enabled'>
>;
