import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isLocalCheckout, localStoresRefusal } from './stores';

const CHECKOUT = resolve(__dirname, '../../..');

describe('which stores the CLI may pick itself', () => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'gensvc-not-a-checkout-'));
  afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));

  it('knows the checkout from a tree without its sources (the image)', () => {
    expect(isLocalCheckout(CHECKOUT)).toBe(true);
    expect(isLocalCheckout(elsewhere)).toBe(false);
  });

  it('refuses a local store outside the checkout or in production, naming DATABASE_URL', () => {
    expect(localStoresRefusal({}, CHECKOUT)).toBeNull();
    expect(localStoresRefusal({}, elsewhere)).toMatch(
      new RegExp(`^DATABASE_URL is not set and ${elsewhere} is not a gensvc checkout`),
    );
    expect(localStoresRefusal({ NODE_ENV: 'production' }, CHECKOUT)).toMatch(
      /^DATABASE_URL is not set and NODE_ENV is production/,
    );
    expect(localStoresRefusal({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/gensvc' }, elsewhere)).toBeNull();
  });
});
