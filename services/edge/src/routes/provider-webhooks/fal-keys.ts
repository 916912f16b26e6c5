// fal's published webhook keys (a JWKS of Ed25519 keys at FAL_WEBHOOK_JWKS_URL), cached per router. The JWKS is
// fetched through libs/outbound like every outbound call: https only, its host's addresses judged against the
// address policy (OUTBOUND_ALLOW_CIDRS), the certificate verified, no redirect followed, the body bounded.
import { errors } from '@gensvc/errors';
import { fetchChecked, type RequestOptions } from '@gensvc/outbound';
import { ed25519Keys } from '@gensvc/webhooks';
import type { KeyObject } from 'node:crypto';
import { json } from 'node:stream/consumers';

/** fal's keys are fetched at most this often, and again early when a signature does not verify (a rotation). */
const JWKS_TTL_MS = 10 * 60_000;
const JWKS_REFRESH_MS = 60_000;
const JWKS_TIMEOUT_MS = 5_000;
/** A JWKS is a few keys; anything much larger is not one. */
const JWKS_MAX_BYTES = 64 * 1024;

export interface FalKeys {
  /** The keys, fetched when older than JWKS_TTL_MS, or when `refresh` and older than JWKS_REFRESH_MS. */
  get(refresh: boolean): Promise<KeyObject[]>;
}

/**
 * One fetch at a time: concurrent webhooks wait for the same one. A failed fetch keeps the keys already held; with
 * none held it is a 503 (webhook_keys_unavailable), so the provider retries later.
 */
export function falKeyCache(url: string, outbound: Omit<RequestOptions, 'method' | 'body'>): FalKeys {
  let keys: KeyObject[] = [];
  let at = 0;
  let pending: Promise<KeyObject[]> | null = null;
  const fetchKeys = async (): Promise<KeyObject[]> => {
    try {
      const res = await fetchChecked(url, {
        ...outbound,
        timeoutMs: JWKS_TIMEOUT_MS,
        maxBytes: JWKS_MAX_BYTES,
        headers: { accept: 'application/json' },
      });
      const fetched = ed25519Keys((await json(res.body)) as { keys?: [] });
      keys = fetched;
      at = Date.now();
      return fetched;
    } catch (e) {
      // Keep the keys and wait a whole TTL before the next fetch: a key endpoint that is down is not asked per webhook.
      if (keys.length) {
        at = Date.now();
        return keys;
      }
      throw errors.webhookKeysUnavailable('The keys to verify this webhook could not be fetched; try again later.', e);
    } finally {
      pending = null;
    }
  };
  return {
    get(refresh) {
      const age = Date.now() - at;
      if (keys.length && age < (refresh ? JWKS_REFRESH_MS : JWKS_TTL_MS)) return Promise.resolve(keys);
      pending ??= fetchKeys();
      return pending;
    },
  };
}
