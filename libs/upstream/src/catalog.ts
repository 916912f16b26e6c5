import { modelRepository, type Db } from '@gensvc/db';

export type CatalogModel = NonNullable<Awaited<ReturnType<typeof modelRepository.get>>>;
export type CatalogRoute = CatalogModel['routes'][number];
export type CatalogChannel = CatalogRoute['channel'];

export interface CatalogOptions {
  /** How long a model and its channels are trusted before being read again; admin changes show within it. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * Models with their routes and channels, read once per TTL per model instead of on every request (the hot paths
 * of evaluate and chat). Concurrent misses for one model share one read.
 */
export class Catalog {
  private readonly entries = new Map<string, { at: number; value: Promise<CatalogModel | null> }>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    options: CatalogOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  model(id: string): Promise<CatalogModel | null> {
    const hit = this.entries.get(id);
    const now = this.now();
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = modelRepository.get(this.db, id);
    this.entries.set(id, { at: now, value });
    value.catch(() => this.entries.delete(id));
    if (this.entries.size > 10_000) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
