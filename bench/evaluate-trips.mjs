// bench/evaluate-trips: where POST /api/v1/evaluate's added latency goes, counted per request. Sends N evaluate
// calls one at a time through the edge and an evaluate-worker (own processes) and counts, over those calls only:
// Redis commands by connection (a MONITOR connection; client names say whose; `lua` lines are the commands run inside
// BullMQ's scripts, not round trips), Postgres transactions (pg_stat_database), the CPU time the edge and the worker
// spend per request (from /proc: unlike latency, it does not grow when a shared machine is throttled), and the mean
// time of each request against the same call straight to the sim. TIMELINE=<n> prints the last n commands with times.
// Then, with MONITOR off, the same calls at concurrency 1 and 32 (5 s each): CPU and read/write system calls per
// request of the edge and the worker (/proc/<pid>/stat and /proc/<pid>/io; a socket write or read is one each).
// SETTLE_MS=<ms> loads at 32 that long, unmeasured, before the c=32 window (the steady state of what accrues).
// Usage: npm run bench -- evaluate-trips   (N=200)
import { performance } from 'node:perf_hooks';
import { cpuMs, redisCpuMs as redisCpu, selfCpuMs, syscalls } from './lib/cpu.mjs';
import { gensvc } from './lib/gensvc.mjs';
import { measure } from './lib/load.mjs';
import { startEdge, startService, startSim } from './lib/processes.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { printTable } from './lib/table.mjs';

const N = Number(process.env.N ?? 200);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 0);
const { createRedisConnection } = gensvc('queue');

const body = (model) =>
  JSON.stringify({ model, state: { transcript: 'The customer asked for a refund.' }, questions: { resolved: { type: 'boolean', instructions: 'Resolved?' } } });

async function timed(url, headers, payload) {
  const t = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return performance.now() - t;
}

await withStack(async ({ env, db }) => {
  const sim = await startSim();
  const procs = [sim];
  try {
    await seedSim(db, sim.url);
    const { auth } = await seedKey(db, { unlimited: true });
    procs.push(await startService('evaluate-worker', env));
    const edge = await startEdge(env);
    procs.push(edge);
    const viaEdge = () => timed(`${edge.url}/api/v1/evaluate`, auth, body('sim/eval-1'));
    const direct = () => timed(`${sim.url}/ch/sim-evaluate/evaluate`, { authorization: 'Bearer sim-secret' }, body('eval-1'));
    for (let i = 0; i < 50; i++) await viaEdge();

    const redis = createRedisConnection(env.REDIS_URL, { name: 'bench:info' });
    const clients = new Map();
    for (const line of (await redis.client('LIST')).split('\n')) {
      const addr = /addr=(\S+)/.exec(line)?.[1];
      const name = /name=(\S*)/.exec(line)?.[1];
      if (addr) clients.set(addr, name || '(unnamed)');
    }
    const monitor = await redis.monitor();
    const counts = new Map();
    const timeline = [];
    monitor.on('monitor', (time, args, source) => {
      const who = clients.get(source) ?? source;
      timeline.push([Number(time) * 1000, who, String(args[0]).toLowerCase(), args[0] === 'evalsha' ? '' : String(args[1] ?? '').slice(-30)]);
      const k = `${who} ${String(args[0]).toLowerCase()}${args[0] === 'evalsha' || args[0] === 'EVALSHA' ? '' : ''}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    });
    const pg = async () => (await db.$queryRawUnsafe('SELECT xact_commit::bigint AS x, tup_fetched::bigint AS f FROM pg_stat_database WHERE datname = current_database()'))[0];
    const before = await pg();
    const cpu0 = { edge: cpuMs(edge.pid), worker: cpuMs(procs[1].pid) };
    let edgeMs = 0;
    const windows = [];
    const epochNow = () => performance.timeOrigin + performance.now();
    for (let i = 0; i < N; i++) {
      const start = epochNow();
      edgeMs += await viaEdge();
      windows.push([start, epochNow()]);
    }
    await new Promise((r) => setTimeout(r, 200));
    const after = await pg();
    const cpu1 = { edge: cpuMs(edge.pid), worker: cpuMs(procs[1].pid) };
    monitor.disconnect();
    let directMs = 0;
    for (let i = 0; i < N; i++) directMs += await direct();

    if (process.env.TIMELINE) {
      const last = timeline.slice(-Number(process.env.TIMELINE));
      for (const [t, who, cmd, arg] of last) console.log(`${(t - last[0][0]).toFixed(2).padStart(8)} ms  ${who.padEnd(34)} ${cmd} ${arg}`);
    }
    const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, (v / N).toFixed(2)]);
    printTable(['redis connection and command', 'per request'], rows);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    console.log(`redis commands per request: ${(total / N).toFixed(2)} (blocking waits included)`);
    // The stats of this database include the counting queries themselves (2) and the bench's own reads.
    console.log(`postgres transactions per request: ${(Number(after.x - before.x) / N).toFixed(2)}`);
    console.log(`CPU per request: edge ${((cpu1.edge - cpu0.edge) / N).toFixed(2)} ms, evaluate-worker ${((cpu1.worker - cpu0.worker) / N).toFixed(2)} ms (MONITOR on)`);
    console.log(`mean latency: direct ${(directMs / N).toFixed(2)} ms, through gensvc ${(edgeMs / N).toFixed(2)} ms, added ${((edgeMs - directMs) / N).toFixed(2)} ms`);
    // Where a serial call's time goes, by the times Redis received each hop's command (MONITOR, same clock as ours):
    // the edge's add, the worker's take (its first script after the add), and its PUBLISH of the reply.
    // The worker's take rides behind its blocking wait (takeOnePerJob), on BullMQ's blocking connection, which BullMQ
    // names `<prefix>:<base64 of the queue's name>`.
    const blocking = `${env.QUEUE_PREFIX}:${Buffer.from('evaluate').toString('base64')}`;
    const isWorker = (who) => who.startsWith('evaluate-worker') || who === blocking;
    const hops = { 'edge: request in → add': [], 'worker woken → take': [], 'take → reply (upstream call inside)': [], 'reply → response at the caller': [] };
    for (const [start, end] of windows) {
      const inside = timeline.filter(([t]) => t >= start && t <= end);
      const take = inside.findIndex(([, who, cmd]) => isWorker(who) && cmd === 'evalsha');
      const add = inside.slice(0, take).findLastIndex(([, who, cmd]) => who.startsWith('edge') && cmd === 'evalsha');
      const reply = inside.findIndex(([, who, cmd]) => who.startsWith('evaluate-worker') && cmd === 'publish');
      if (take < 0 || add < 0 || reply < take) continue;
      const [tAdd, tTake, tReply] = [inside[add][0], inside[take][0], inside[reply][0]];
      const values = [tAdd - start, tTake - tAdd, tReply - tTake, end - tReply];
      Object.values(hops).forEach((list, i) => list.push(values[i]));
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    printTable(['serial call, hop (MONITOR on)', 'p50 ms'], Object.entries(hops).map(([k, v]) => [k, median(v).toFixed(2)]));
    // The units a serial call is made of, timed from here in the same window (MONITOR off): a Redis round trip (each
    // of the call's four Redis crossings costs at least one), a Postgres commit (evaluate answers once its charge is
    // written) and the upstream call straight to the sim.
    const unit = async (fn) => { const ts = []; for (let i = 0; i < 100; i++) { const t = performance.now(); await fn(); ts.push(performance.now() - t); } return median(ts); };
    const units = [
      ['Redis round trip (PING)', await unit(() => redis.ping())],
      ['Postgres read (SELECT 1, via Prisma)', await unit(() => db.$queryRawUnsafe('SELECT 1'))],
      ['Postgres commit (SELECT txid_current(): a WAL flush)', await unit(() => db.$queryRawUnsafe('SELECT txid_current()'))],
      ['upstream call straight to the sim', await unit(direct)],
    ];
    printTable(['unit, same window', 'p50 ms'], units.map(([k, v]) => [k, v.toFixed(2)]));

    const target = { url: `${edge.url}/api/v1/evaluate`, headers: { 'content-type': 'application/json', ...auth }, body: body('sim/eval-1') };
    const rows2 = [];
    // Redis's own CPU (INFO: it serves every engineer's tests too, so read it as an upper bound), the sim's and this
    // load generator's, to show where the two cores go.
    const redisCpuMs = redisCpu(redis);
    for (const concurrency of [1, 32]) {
      // SETTLE_MS: load at 32 first, unmeasured, until what builds up with time is in its steady state (BullMQ sweeps
      // kept jobs by age: a build that kept completed jobs a minute paid for their removal only after one).
      if (SETTLE_MS > 0 && concurrency === 32) await measure(target, { concurrency, durationMs: SETTLE_MS, warmupMs: 0 });
      const pids = { edge: edge.pid, worker: procs[1].pid };
      const o0 = { redis: await redisCpuMs(), sim: cpuMs(sim.pid), load: selfCpuMs() };
      const c0 = { edge: cpuMs(pids.edge), worker: cpuMs(pids.worker) };
      const s0 = { edge: syscalls(pids.edge), worker: syscalls(pids.worker) };
      const r = await measure(target, { concurrency, warmupMs: 0 });
      const n = r.answered + r.errors;
      const c1 = { edge: cpuMs(pids.edge), worker: cpuMs(pids.worker) };
      const s1 = { edge: syscalls(pids.edge), worker: syscalls(pids.worker) };
      const o1 = { redis: await redisCpuMs(), sim: cpuMs(sim.pid), load: selfCpuMs() };
      const per = (v) => (v / n).toFixed(2);
      rows2.push([`c=${concurrency}`, r.rps.toFixed(0), per(c1.edge - c0.edge), per(c1.worker - c0.worker), per(s1.edge.w - s0.edge.w), per(s1.edge.r - s0.edge.r), per(s1.worker.w - s0.worker.w), per(s1.worker.r - s0.worker.r), per(o1.redis - o0.redis), per(o1.sim - o0.sim), per(o1.load - o0.load)]);
    }
    console.log('MONITOR off, per request:');
    printTable(['load', 'req/s', 'edge CPU ms', 'worker CPU ms', 'edge writes', 'edge reads', 'worker writes', 'worker reads', 'redis CPU ms', 'sim CPU ms', 'load gen CPU ms'], rows2);
    redis.disconnect();
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
});
