// bench/charge-statement: the time of gensvc_lease_charge (the group-committed charge of every paid call) per batch
// size, against a one-row INSERT's commit on the same connection in the same run. Evaluate answers only once its
// charge is written, so this statement is a serial wait of every evaluate call.
//
// Two versions of the function run side by side in one database: `current` (what the migrations make it now) and
// `first` (the entry-by-entry version of prisma/migrations/20261124010000_budget_leases, created under another name).
// Each case is one call, autocommit, as the edge sends it (`total`), and the same call inside BEGIN … COMMIT, timed
// apart (`exec` the statement, `commit` the COMMIT: WAL flush). The versions and the baseline are alternated call by
// call, in rotating order, so a machine loaded by something else weighs on all of them alike. Each batch charges a
// fresh set of entries against one lease (LEASES=n spreads them over n leases of n keys).
// Usage: npm run bench -- charge-statement   (CALLS=200 per case and size, SIZES=1,4,16,32, LEASES=1)
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { gensvc, root } from './lib/gensvc.mjs';
import { ms, printTable } from './lib/table.mjs';

const CALLS = Number(process.env.CALLS ?? 200);
const SIZES = (process.env.SIZES ?? '1,4,16,32').split(',').map(Number);
const LEASES = Number(process.env.LEASES ?? 1);

const { startStack } = gensvc('local-stack');
const { migrate } = gensvc('db');
const pg = (await import('pg')).default;

/** The first version of the function, from its migration, as gensvc_lease_charge_first. */
function firstVersion() {
  const sql = readFileSync(join(root, 'prisma/migrations/20261124010000_budget_leases/migration.sql'), 'utf8');
  const m = /CREATE FUNCTION gensvc_lease_charge\(.*?\nEND \$\$;/s.exec(sql);
  if (!m) throw new Error('gensvc_lease_charge not found in the budget_leases migration');
  return m[0].replace('CREATE FUNCTION gensvc_lease_charge(', 'CREATE OR REPLACE FUNCTION gensvc_lease_charge_first(');
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-bench-'));
const stack = await startStack({ dataDir, persistent: false, env: process.env, need: { redis: false, s3: false } });
const dbName = `gensvc_charge_bench_${process.pid}`;
const serverUrl = new URL(stack.env.DATABASE_URL);
const adminUrl = new URL(serverUrl);
adminUrl.pathname = '/postgres';
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${dbName}`;
const admin = new pg.Client({ connectionString: adminUrl.toString() });
await admin.connect();
await admin.query(`CREATE DATABASE "${dbName}"`);
const c = new pg.Client({ connectionString: dbUrl.toString() });
try {
  await migrate(dbUrl.toString());
  await c.connect();
  await c.query(firstVersion());
  await c.query('CREATE TABLE bench_commit (id TEXT PRIMARY KEY)');
  const settings = await c.query(
    "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'server_version') ORDER BY name",
  );
  console.log(settings.rows.map((r) => `${r.name}=${r.setting}`).join(' '));

  await c.query(`INSERT INTO "Workspace" ("id", "name", "balance") VALUES ('ws_bench', 'bench', 1000000000000000)`);
  const leases = [];
  for (let i = 0; i < LEASES; i++) {
    await c.query(`INSERT INTO "ApiKey" ("id", "workspaceId", "name", "prefix", "hash", "scopes") VALUES ($1, 'ws_bench', 'k', 'p', $1, '{}')`, [`key_${i}`]);
    await c.query(`SELECT * FROM gensvc_lease($1, 'ws_bench', $2, 'req', 1, 100000000000000, '2100-01-01')`, [`lease_${i}`, `key_${i}`]);
    leases.push(`lease_${i}`);
  }

  let seq = 0;
  const batch = (n) =>
    JSON.stringify(
      Array.from({ length: n }, (_, i) => {
        const id = `led_${(seq++).toString(36)}`;
        return { id, lease: leases[i % leases.length], cost: '1234', request: `req_${id}`, model: 'sim/eval-1', input: 12, output: 34 };
      }),
    );
  const expires = () => new Date(Date.now() + 30_000).toISOString();
  const variants = {
    first: (n) => ({ name: 'charge_first', text: 'SELECT id, charged FROM gensvc_lease_charge_first($1::jsonb, $2::timestamp(3))', values: [batch(n), expires()] }),
    current: (n) => ({ name: 'charge_current', text: 'SELECT id, charged FROM gensvc_lease_charge($1::jsonb, $2::timestamp(3))', values: [batch(n), expires()] }),
    insert: () => ({ name: 'insert_one', text: 'INSERT INTO bench_commit (id) VALUES ($1)', values: [`c_${(seq++).toString(36)}`] }),
  };
  const names = Object.keys(variants);

  /** One call: autocommit (total), or BEGIN; the statement (exec); COMMIT (commit). */
  async function call(v, n, split) {
    const q = variants[v](n);
    if (!split) {
      const t = performance.now();
      const r = await c.query(q);
      const total = performance.now() - t;
      if (v !== 'insert' && !(r.rows.length === n && r.rows.every((x) => x.charged))) throw new Error(`${v} did not charge the batch`);
      return { total };
    }
    await c.query('BEGIN');
    const t0 = performance.now();
    await c.query(q);
    const t1 = performance.now();
    await c.query('COMMIT');
    return { exec: t1 - t0, commit: performance.now() - t1 };
  }

  for (const v of names) for (let i = 0; i < 20; i++) await call(v, 4, false); // plans cached, caches warm
  const rows = [];
  const ratios = [];
  for (const n of SIZES) {
    const t = Object.fromEntries(names.map((v) => [v, { total: [], exec: [], commit: [] }]));
    for (let i = 0; i < CALLS; i++) {
      for (let j = 0; j < names.length; j++) {
        const v = names[(i + j) % names.length];
        for (const split of [false, true]) for (const [k, x] of Object.entries(await call(v, n, split))) t[v][k].push(x);
      }
    }
    for (const v of names) {
      const { total, exec, commit } = t[v];
      rows.push([
        v === 'insert' ? 'one-row INSERT' : `${v} (n=${n})`,
        ms(quantile(total, 0.1)),
        ms(quantile(total, 0.5)),
        ms(quantile(total, 0.9)),
        ms(quantile(exec, 0.5)),
        ms(quantile(commit, 0.5)),
      ]);
    }
    // Per call pair (same i, adjacent in time): how often the current version was the faster of the two.
    const wins = t.current.total.filter((x, i) => x < t.first.total[i]).length;
    ratios.push([`n=${n}`, ms(quantile(t.first.total, 0.5) - quantile(t.insert.total, 0.5)), ms(quantile(t.current.total, 0.5) - quantile(t.insert.total, 0.5)), `${wins}/${CALLS}`]);
  }
  console.log(`\ngensvc_lease_charge per batch of n entries (${LEASES} lease(s)), ${CALLS} calls per case, ms`);
  printTable(['case', 'p10', 'p50', 'p90', 'exec p50', 'commit p50'], rows);
  console.log('\np50 over the one-row INSERT of the same size run, and how many alternated pairs the current version won');
  printTable(['size', 'first − insert', 'current − insert', 'current faster'], ratios);
} finally {
  await c.end().catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  await stack.stop();
}
