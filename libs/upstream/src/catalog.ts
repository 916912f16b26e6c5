import { channelRepository, modelRepository, openChannel, type Db, type SecretBox } from '@gensvc/db';
import { usableRoutes } from './failover';

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
 * With SharedUpstreamState subscribed, an admin's change (`model disable`, `channel update`…) drops the cached copy
 * on every replica at once, and the cache is trusted only while that subscription is live (as the edge's key cache).
 * Channels' credentials are opened as they are read (openChannel): once per read into the cache, never per call.
 */
export class Catalog {
  private readonly models: TtlMap<CatalogModel | null>;
  private readonly channels: TtlMap<CatalogChannel | null>;
  /** Every model, one entry: dropped by any change to a model or a channel. */
  private readonly lists: TtlMap<CatalogModel[]>;
  /** False while an invalidation subscription is expected but down: every look-up reads Postgres then. */
  private trusted = true;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    options: CatalogOptions = {},
  ) {
    this.models = new TtlMap(options.ttlMs ?? 5_000, options.now ?? Date.now);
    this.channels = new TtlMap(options.ttlMs ?? 5_000, options.now ?? Date.now);
    this.lists = new TtlMap(options.ttlMs ?? 5_000, options.now ?? Date.now);
  }

  model(id: string): Promise<CatalogModel | null> {
    const read = async () => {
      const model = await modelRepository.get(this.db, id);
      return model && this.opened(model);
    };
    return this.trusted ? this.models.get(id, read) : read();
  }

  /**
   * The models that can serve calls now, by id: enabled, with at least one route a call would try (usableRoutes,
   * the rule orderRoutes applies). Model discovery lists these and nothing else.
   */
  async usableModels(): Promise<CatalogModel[]> {
    const read = async () => {
      const seen = new Map<string, CatalogChannel>();
      return (await modelRepository.listWithChannels(this.db)).map((m) => this.opened(m, seen));
    };
    const all = await (this.trusted ? this.lists.get('all', read) : read());
    return all.filter((m) => m.enabled && usableRoutes(m.routes).length > 0);
  }

  /** A channel by id, whatever models route to it (a task's, which keeps polling the channel it was submitted to). */
  channel(id: string): Promise<CatalogChannel | null> {
    const read = async () => {
      const channel = await channelRepository.get(this.db, id);
      return channel && openChannel(this.secrets, channel);
    };
    return this.trusted ? this.channels.get(id, read) : read();
  }

  /**
   * `model:<id>` drops that model; `channel:<id>` drops the channel and every model (each carries its channels);
   * anything else drops everything. Reads in flight are dropped too, so none of them is cached past the change.
   */
  invalidate(message: string) {
    const [kind, id] = [message.slice(0, message.indexOf(':')), message.slice(message.indexOf(':') + 1)];
    this.lists.clear();
    if (kind === 'model') this.models.delete(id);
    else if (kind === 'channel') {
      this.channels.delete(id);
      this.models.clear();
    } else this.clear();
  }

  /** The model with its channels opened; `seen` keeps a channel several models route to opened once per read. */
  private opened(model: CatalogModel, seen = new Map<string, CatalogChannel>()): CatalogModel {
    const open = (c: CatalogChannel) => {
      const done = seen.get(c.id) ?? openChannel(this.secrets, c);
      seen.set(c.id, done);
      return done;
    };
    return { ...model, routes: model.routes.map((r) => ({ ...r, channel: open(r.channel) })) };
  }

  /** Called as the invalidation subscription comes and goes; the cache starts empty either way. */
  setTrusted(trusted: boolean) {
    this.trusted = trusted;
    this.clear();
  }

  private clear() {
    this.models.clear();
    this.channels.clear();
    this.lists.clear();
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

  delete(id: string) {
    this.entries.delete(id);
  }

  clear() {
    this.entries.clear();
  }
}
