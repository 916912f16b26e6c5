// bench/signin-storm: what a storm of sign-ins costs the edge. 32 sign-ins are fired at once, each from its own
// client address (the edge trusts the loopback proxy, so X-Forwarded-For names them) to an unknown e-mail (checked
// against the decoy hash, at a real hash's cost), so that no throttle refuses them and only the password hashing
// budget (PASSWORD_HASH_CONCURRENCY, default 1) bounds them. Meanwhile the edge's RSS is sampled and
// GET /api/v1/me/balance is called one request at a time; its p50 is compared with the same calls on the idle edge.
// Targets: RSS rises by less than 150 MiB; the balance p50 stays within 2x of idle.
// Usage: npm run bench -- signin-storm   (PASSWORD_HASH_CONCURRENCY=<n> to try another budget)
import { join } from 'node:path';
import { gensvc, root } from './lib/gensvc.mjs';
import { startNode } from './lib/processes.mjs';
import { rssSampler } from './lib/rss.mjs';
import { seedKey, withStack } from './lib/stack.mjs';
import { percentiles } from './lib/stats.mjs';
import { ms, printTable, ratio, verdict } from './lib/table.mjs';

const STORM = 32;
const IDLE_CALLS = 300;
const TARGET_RSS_MIB = 150;
const TARGET_SLOWDOWN = 2;
const { serviceNodeFlags } = gensvc('local-stack');

/** The edge as startEdge starts it, with a longer wait for readiness (a busy shared machine boots it slowly). */
const startEdge = (env, extra) =>
  startNode({
    name: 'edge',
    script: join(root, 'services', 'edge', 'dist', 'main.js'),
    nodeArgs: serviceNodeFlags(root, 'edge'),
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', OPS_PORT: '0', ...env, ...extra },
    readyPath: '/readyz',
    timeoutMs: 120_000,
  });

await withStack(async ({ env, db }) => {
  const { auth } = await seedKey(db, { unlimited: true });
  const extra = {
    TRUST_PROXY: 'loopback',
    ...(process.env.PASSWORD_HASH_CONCURRENCY
      ? { PASSWORD_HASH_CONCURRENCY: process.env.PASSWORD_HASH_CONCURRENCY }
      : {}),
  };
  const edge = await startEdge(env, extra);
  try {
    const balance = async () => {
      const started = process.hrtime.bigint();
      const res = await fetch(`${edge.url}/api/v1/me/balance`, { headers: auth });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`balance answered ${res.status}`);
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    /** A browser's sign-in from `ip`: the page's GET sets the CSRF cookie, then the form posts. Answers the status. */
    const signIn = async (ip, email, csrf) => {
      const res = await fetch(`${edge.url}/api/v1/dashboard/session`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-forwarded-for': ip,
          cookie: `gsvc_csrf=${csrf}`,
          'x-csrf-token': csrf,
          origin: edge.url,
        },
        body: JSON.stringify({ email, password: 'a guess at a password' }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    const csrfFor = async (ip) => {
      const res = await fetch(`${edge.url}/api/v1/dashboard/session`, { headers: { 'x-forwarded-for': ip } });
      await res.arrayBuffer();
      return /gsvc_csrf=([^;]+)/.exec(res.headers.getSetCookie().join('\n'))[1];
    };

    // Warm-up: the routes, the connections and one hash (module loading and pool set-up are not the storm's cost).
    for (let i = 0; i < 50; i++) await balance();
    await signIn('198.51.100.254', 'warm-up@example.com', await csrfFor('198.51.100.254'));
    await new Promise((r) => setTimeout(r, 2000));

    // The baseline is the edge serving the same balance calls without the storm (its heap grows with any traffic).
    const idleSampler = rssSampler(edge.pid, 10);
    const idle = [];
    for (let i = 0; i < IDLE_CALLS; i++) idle.push(await balance());
    const idleRss = idleSampler.stop();

    const ips = Array.from({ length: STORM }, (_, i) => `198.51.100.${i + 1}`);
    const csrfs = await Promise.all(ips.map(csrfFor));
    const rss = rssSampler(edge.pid, 10);
    const started = process.hrtime.bigint();
    let stormOver = false;
    const storm = Promise.all(ips.map((ip, i) => signIn(ip, `nobody-${i}@example.com`, csrfs[i]))).finally(
      () => (stormOver = true),
    );
    const during = [];
    while (!stormOver) during.push(await balance());
    const statuses = await storm;
    const stormMs = Number(process.hrtime.bigint() - started) / 1e6;
    const peakRss = rss.stop();

    const count = (s) => statuses.filter((x) => x === s).length;
    const others = statuses.filter((s) => s !== 401 && s !== 503);
    const idleP = percentiles(idle);
    const duringP = percentiles(during);
    const rise = peakRss - idleRss;
    const slowdown = duringP.p50 / idleP.p50;
    console.log(
      `bench/signin-storm  node ${process.version}, PASSWORD_HASH_CONCURRENCY=` +
        `${extra.PASSWORD_HASH_CONCURRENCY ?? '1 (default)'}`,
    );
    console.log(
      `${STORM} sign-ins at once: ${count(401)} checked (401), ${count(503)} refused at once (503 Retry-After)` +
        `${others.length ? `, ${others.length} other (${others.join(',')})` : ''}; the storm lasted ` +
        `${(stormMs / 1000).toFixed(1)} s`,
    );
    printTable(
      ['GET /api/v1/me/balance', 'calls', 'p50 ms', 'p99 ms'],
      [
        ['idle', idle.length, ms(idleP.p50), ms(idleP.p99)],
        ['during the storm', during.length, ms(duringP.p50), ms(duringP.p99)],
      ],
    );
    console.log(
      `balance p50 during the storm: ${ratio(slowdown)} idle (target within ${TARGET_SLOWDOWN}x): ` +
        `${verdict(slowdown <= TARGET_SLOWDOWN)}`,
    );
    console.log(
      `edge RSS: peak ${idleRss.toFixed(0)} MiB serving balance calls alone, ${peakRss.toFixed(0)} MiB with the ` +
        `storm: +${rise.toFixed(0)} MiB (target < ${TARGET_RSS_MIB} MiB): ${verdict(rise < TARGET_RSS_MIB)}`,
    );
  } finally {
    await edge.stop();
  }
});
