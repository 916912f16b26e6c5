import { withTx, type DbClient } from '../client';
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
  get(db: DbClient, id: string) {
    return db.channel.findUnique({ where: { id } });
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
  remove(db: DbClient, id: string): Promise<{ ok: true } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'in_use'; tasks: number }> {
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

export type UpdateChannelInput = Partial<Pick<CreateChannelInput, 'baseUrl' | 'secret' | 'evaluatePath' | 'priority' | 'weight' | 'timeoutMs' | 'enabled'>>;
