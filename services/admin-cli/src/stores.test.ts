import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isLocalCheckout, localStoresRefusal, readCliEnv, resolveStores } from './stores';

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

describe("the environment's stores behind a transaction-mode pooler", () => {
  const pooled = 'postgresql://u:pw@bouncer:6432/gensvc';
  const direct = 'postgresql://u:pw@postgres:5432/gensvc';
  const stores = async (env: NodeJS.ProcessEnv) => {
    const read = readCliEnv(env);
    if (!('env' in read)) throw new Error(read.problems.join('; '));
    return resolveStores(read.env, CHECKOUT, () => {});
  };

  it('migrates on DIRECT_DATABASE_URL and sends statements unnamed (DATABASE_POOLER or pgbouncer=true)', async () => {
    expect(
      await stores({ DATABASE_URL: pooled, DATABASE_POOLER: 'transaction', DIRECT_DATABASE_URL: direct }),
    ).toMatchObject({ databaseUrl: pooled, pooler: 'transaction', migrationUrl: direct });
    expect(await stores({ DATABASE_URL: `${pooled}?pgbouncer=true` })).toMatchObject({ pooler: 'transaction' });
    expect(await stores({ DATABASE_URL: direct })).toMatchObject({ pooler: 'none', migrationUrl: direct });
  });

  it('refuses a DATABASE_POOLER it does not know', () => {
    expect(readCliEnv({ DATABASE_URL: pooled, DATABASE_POOLER: 'session' })).toEqual({
      problems: [expect.stringMatching(/^DATABASE_POOLER: /)],
    });
  });
});
