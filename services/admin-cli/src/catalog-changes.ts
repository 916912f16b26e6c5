// After a change to a model or channel: tell every replica to drop its cached copy (libs/upstream Catalog), so a
// disabled channel or model is refused everywhere at once, as a revoked key is.
import { publishCatalogChange } from '@gensvc/upstream';
import type { Deps } from './command';

/**
 * Without a known Redis no service is running, so there is nothing to tell; a failed publish leaves caches to
 * expire on their TTL (a few seconds), which is worth a warning only.
 */
export async function announceCatalogChange(
  { redis, queuePrefix, out }: Deps,
  change: { model: string } | { channel: string },
) {
  if (!redis) return;
  try {
    await publishCatalogChange(redis, queuePrefix, change);
  } catch (e) {
    const what = 'model' in change ? `model ${change.model}` : `channel ${change.channel}`;
    out.note(
      `warning: could not announce the change of ${what} on Redis (${(e as Error).message}); services drop their ` +
        `cached copy within seconds.`,
    );
  }
}
