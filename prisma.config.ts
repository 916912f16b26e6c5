// Prisma 6.19 runs its CLI offline only with the JS engine and a driver adapter (NOTES-deps.md).
// Two adapter-pg bugs are worked around here, for the CLI only (the services never read these types):
// 1. migrate's introspection reads Postgres "char" (OID 18) and name (OID 19) columns that the adapter cannot
//    decode: results are relabelled as text (OID 25);
// 2. the shadow database of `migrate dev` is addressed by discrete fields (a connection string would override
//    its name) and dropped WITH (FORCE) after its pool is closed.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { defineConfig } from 'prisma/config';

type AnyFunction = (...args: unknown[]) => unknown;

const TEXT_OID = 25;
const UNDECODABLE_OIDS = new Set([18, 19]);

function relabel<T>(result: T): T {
  const fields = (result as { fields?: { dataTypeID: number }[] } | undefined)?.fields;
  for (const field of fields ?? []) if (UNDECODABLE_OIDS.has(field.dataTypeID)) field.dataTypeID = TEXT_OID;
  return result;
}

class RelabellingClient extends pg.Client {
  // pg.Client.query has many overloads; this one wraps whichever form is used.
  // biome-ignore lint/suspicious/noExplicitAny: an override must answer every overload's return type.
  override query(...args: unknown[]): any {
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = (err: unknown, res: unknown) => (last as AnyFunction)(err, err ? res : relabel(res));
      return (super.query as AnyFunction).apply(this, args);
    }
    const out = (super.query as AnyFunction).apply(this, args) as Promise<unknown> | undefined;
    return out && typeof out.then === 'function' ? out.then(relabel) : out;
  }
}

function poolConfig(url: string): pg.PoolConfig {
  const u = new URL(url);
  return {
    host: decodeURIComponent(u.hostname),
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username) || undefined,
    password: decodeURIComponent(u.password) || undefined,
    database: decodeURIComponent(u.pathname.slice(1)),
    Client: RelabellingClient,
    // The CLI does not always dispose of the adapter; idle clients must not hold the process open.
    allowExitOnIdle: true,
  } as pg.PoolConfig;
}

class CliPrismaPg extends PrismaPg {
  override async connectToShadowDb() {
    const config = (this as unknown as { config: pg.PoolConfig }).config;
    const admin = new pg.Pool(config);
    const database = `prisma_migrate_shadow_db_${globalThis.crypto.randomUUID()}`;
    await admin.query(`CREATE DATABASE "${database}"`);
    const pool = new pg.Pool({ ...config, database });
    const shadow = await new PrismaPg(pool).connect();
    const dispose = shadow.dispose.bind(shadow);
    shadow.dispose = async () => {
      await dispose();
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    };
    return shadow;
  }
}

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  adapter: async () => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set');
    return new CliPrismaPg(poolConfig(url));
  },
});
