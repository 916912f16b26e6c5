import { modelRepository, type Db } from '@gensvc/db';

export type CatalogModel = NonNullable<Awaited<ReturnType<typeof modelRepository.get>>>;
export type CatalogRoute = CatalogModel['routes'][number];
export type CatalogChannel = CatalogRoute['channel'];

/** The provider's name for the model: the route's upstreamModel, else the part of the id after the slash. */
export const upstreamModelOf = (route: Pick<CatalogRoute, 'upstreamModel'>, model: Pick<CatalogModel, 'id'>) =>
  route.upstreamModel ?? model.id.slice(model.id.indexOf('/') + 1);

export interface CatalogOptions {
  /** How long a model or channel is trusted before being read again; admin changes show within it. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * Models with their routes and channels, and channels by id, read once per TTL each instead of on every request or
 * job (the hot paths of evaluate and chat; a task's polls). Concurrent misses for one id share one read.
 */
export class Catalog {
  private readonly models: TtlMap<CatalogModel | null>;
  private readonly channels: TtlMap<CatalogChannel | null>;

  constructor(
    private readonly db: Db,
    options: CatalogOptions = {},
  ) {
    this.models = new TtlMap(options.ttlMs ?? 5_000, options.now ?? Date.now);
    this.channels = new TtlMap(options.ttlMs ?? 5_000, options.now ?? Date.now);
  }

  model(id: string): Promise<CatalogModel | null> {
    return this.models.get(id, () => modelRepository.get(this.db, id));
  }

  /** A channel by id, whatever models route to it (a task's, which keeps polling the channel it was submitted to). */
  channel(id: string): Promise<CatalogChannel | null> {
    return this.channels.get(id, () => this.db.channel.findUnique({ where: { id } }));
  }
}

class TtlMap<V> {
  private readonly entries = new Map<string, { at: number; value: Promise<V> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(id: string, read: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(id);
    const now = this.now();
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = read();
    this.entries.set(id, { at: now, value });
    value.catch(() => this.entries.delete(id));
    if (this.entries.size > 10_000) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
