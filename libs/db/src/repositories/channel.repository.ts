import { queryPrepared, withTx, type DbClient } from '../client';
import type { Channel } from '../generated/prisma/client';
import type { ChannelKind } from '../generated/prisma/enums';
import { newId } from '../ids';
import { isSealed, secretAad, type SecretBox } from '../secret-box';

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

// A channel's credential is stored sealed for its row (secret-box.ts); "" (no credential) is stored as it is.
// Repository reads answer the stored value: whoever calls the provider opens it once (openChannel), where it keeps
// the channel (the catalog's cache), and never per request.
const channelAad = (id: string) => secretAad('channel.secret', id);
const sealSecret = (box: SecretBox, id: string, secret: string) => (secret ? box.seal(secret, channelAad(id)) : '');

/** The channel with its credential opened, to call the provider with. */
export const openChannel = <C extends Pick<Channel, 'id' | 'secret'>>(box: SecretBox, channel: C): C =>
  channel.secret ? { ...channel, secret: box.open(channel.secret, channelAad(channel.id)) } : channel;

/** How many rows a re-sealing looked at, sealed from plaintext, and moved to the current key. */
export interface ResealCounts {
  rows: number;
  sealed: number;
  rekeyed: number;
}

const RESEAL_BATCH = 100;

export const channelRepository = {
  create(db: DbClient, box: SecretBox, input: CreateChannelInput) {
    const id = newId('ch');
    return db.channel.create({ data: { id, ...input, secret: sealSecret(box, id, input.secret ?? '') } });
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
  async update(db: DbClient, box: SecretBox, id: string, patch: UpdateChannelInput) {
    const data = patch.secret === undefined ? patch : { ...patch, secret: sealSecret(box, id, patch.secret) };
    const { count } = await db.channel.updateMany({ where: { id }, data });
    return count ? db.channel.findUnique({ where: { id } }) : null;
  },
  /**
   * Seals every credential under the current key: plaintext ones (stored before sealing) and those of older keys.
   * Batches of rows, each locked and rewritten in its own transaction; a row already current is left as it is, so
   * running it again changes nothing.
   */
  async resealAll(db: DbClient, box: SecretBox): Promise<ResealCounts> {
    const counts: ResealCounts = { rows: 0, sealed: 0, rekeyed: 0 };
    for (let after = ''; ; ) {
      const last = await withTx(db, async (tx) => {
        const rows = await tx.$queryRaw<{ id: string; secret: string }[]>`
          SELECT id, secret FROM "Channel" WHERE id > ${after} ORDER BY id LIMIT ${RESEAL_BATCH} FOR UPDATE`;
        for (const row of rows) {
          counts.rows++;
          if (!row.secret || box.isCurrent(row.secret)) continue;
          const plaintext = box.open(row.secret, channelAad(row.id));
          if (isSealed(row.secret)) counts.rekeyed++;
          else counts.sealed++;
          await tx.channel.update({ where: { id: row.id }, data: { secret: sealSecret(box, row.id, plaintext) } });
        }
        return rows.length === RESEAL_BATCH ? rows.at(-1)!.id : null;
      });
      if (last === null) return counts;
      after = last;
    }
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
