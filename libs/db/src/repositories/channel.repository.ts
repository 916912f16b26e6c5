import type { DbClient } from '../client';
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
};
