import type { ApiKeyLookup } from '@gensvc/db';
import { KeyCache } from './key-cache';

const lookup = (id: string) => ({ key: { id }, matched: 'current' }) as unknown as ApiKeyLookup;

describe('KeyCache', () => {
  let now = 0;
  const cache = () => {
    const c = new KeyCache({ ttlMs: 1000, maxEntries: 3, now: () => now });
    c.setLive(true);
    return c;
  };
  beforeEach(() => (now = 0));

  it('serves entries within the TTL, then forgets them', () => {
    const c = cache();
    c.set('h1', lookup('k1'), c.begin());
    c.set('h2', null, c.begin());
    expect(c.get('h1')?.key.id).toBe('k1');
    expect(c.get('h2')).toBeNull();
    now = 999;
    expect(c.get('h1')?.key.id).toBe('k1');
    now = 1000;
    expect(c.get('h1')).toBeUndefined();
  });

  it('drops every secret of an invalidated key, and nothing else', () => {
    const c = cache();
    c.set('current', lookup('k1'), c.begin());
    c.set('previous', lookup('k1'), c.begin());
    c.set('other', lookup('k2'), c.begin());
    c.invalidate('k1');
    expect(c.get('current')).toBeUndefined();
    expect(c.get('previous')).toBeUndefined();
    expect(c.get('other')?.key.id).toBe('k2');
  });

  it('does not cache a look-up that raced an invalidation', () => {
    const c = cache();
    const epoch = c.begin(); // the look-up starts reading Postgres…
    c.invalidate('k1'); // …the key is revoked meanwhile…
    c.set('h1', lookup('k1'), epoch); // …and the stale answer arrives
    expect(c.get('h1')).toBeUndefined();
  });

  it('is bypassed while the invalidation channel is down, and starts empty when it returns', () => {
    const c = cache();
    c.set('h1', lookup('k1'), c.begin());
    c.setLive(false);
    expect(c.get('h1')).toBeUndefined();
    c.set('h1', lookup('k1'), c.begin());
    expect(c.size).toBe(0);
    c.setLive(true);
    expect(c.get('h1')).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the oldest', () => {
    const c = cache();
    for (const h of ['a', 'b', 'c', 'd']) c.set(h, null, c.begin());
    expect(c.size).toBe(3);
    expect(c.get('a')).toBeUndefined();
    expect(c.get('d')).toBeNull();
  });
});
