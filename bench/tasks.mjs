// bench/tasks: generation tasks end to end and callback deliveries, each against raw BullMQ job throughput measured
// in the same run (a no-op worker at the same concurrency: the floor any queue-driven pipeline stands on).
//
//   1. tasks/s: TASKS image tasks created through the edge (CONCURRENCY callers), each submitted by the task-runner to
//      the upstream-sim's Replicate or fal protocol, archived into S3 by the archiver and called back by the
//      callback-dispatcher to a local HTTPS receiver (a process of its own, lib/receiver.mjs, which checks every
//      signature): first create → last callback received. p50/p99 from each task's completion (completedAt) to its
//      callback's arrival, and each process's CPU per task (Postgres's by the service whose connections it served).
//   2. callback deliveries/s: a new delivery round (the redelivery path) for DELIVERIES tasks at once (default
//      TASKS × JOBS_PER_TASK, the raw baseline's job count), the dispatcher alone, after WARMUP_REDELIVERIES unmeasured
//      rounds. Three measured rounds, each followed at once by its raw baseline at the dispatcher's concurrency: the
//      figure is the median of the three ratios, as this machine's speed moves within minutes. After each raw round,
//      the floor dispatcher's (lib/floor-deliver.mjs: BullMQ and the same signed bytes POSTed to the same receiver,
//      nothing else) round of as many jobs, against the same raw round.
//   3. baseline: raw BullMQ, TASKS × JOBS_PER_TASK no-op jobs (a task is ~5 jobs: submit, polls, archive, callback)
//      through one worker of the callers' concurrency (for tasks, ÷ 5: one round right before phase 1 and one right
//      after it, their mean the figure, after four unmeasured rounds), and of the dispatcher's concurrency (for
//      deliveries, beside each measured round).
//   0. creation without a callback_url (another workspace, run to the end first): the cost of the callback_url check.
//      Then unmeasured warm-up rounds: WARMUP_TASKS tasks with a callback_url run to their callbacks in rounds of
//      TASKS, so every process has opened its pools and V8 has optimised its hot code before the timed phase 1.
//   4. creations with and without a callback_url interleaved, last: the same comparison under the same load (two
//      passes, the halves swapped in the second).
// Then the per-task time budget (p50 of each step, from the rows' timestamps) and what each task cost the stores and
// the network (Postgres transactions, provider requests by kind, TLS handshakes).
// The sim runs each provider job for SIM_TASK_MS (default 50 ms). Usage: npm run bench -- tasks
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { Worker } from 'bullmq';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gensvc, root, service } from './lib/gensvc.mjs';
import { startNode, startService } from './lib/processes.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { CORES, cpuMs, syscalls } from './lib/cpu.mjs';
import { percentiles } from './lib/stats.mjs';
import { int, ms, printTable, ratio, reportFigures } from './lib/table.mjs';

const TASKS = Number(process.env.TASKS ?? 300);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SIM_TASK_MS = Number(process.env.SIM_TASK_MS ?? 50);
// The dispatcher's concurrency: its own default (CALLBACK_DISPATCHER_CONCURRENCY, 64) unless set. Its attempts mostly
// wait, and the attempts in flight share their Postgres statements, so it runs more at once than the other workers.
const DISPATCHER_CONCURRENCY = process.env.DISPATCHER_CONCURRENCY;
// Its default as libs/config sets it (CALLBACK_DISPATCHER_CONCURRENCY), for the baseline of the same concurrency.
const DISPATCHER_IN_FLIGHT = Number(DISPATCHER_CONCURRENCY ?? 64);
const JOBS_PER_TASK = 5;
// The unmeasured warm-up before phase 1 (0 for none), in rounds of TASKS: a gateway serves from warm processes, and
// V8 optimises a function called once per task only after hundreds to thousands of tasks.
const WARMUP_TASKS = Number(process.env.WARMUP_TASKS ?? 10 * TASKS);
// The processes the product runs (the rest of the CPU is the harness's: the sim, s3rver, the receiver, the callers).
const GATEWAY = ['edge', 'task-runner', 'archiver', 'callback-dispatcher', 'Postgres', 'Redis'];
/** CPU ms per item of the processes `names` (all of them by default), from CPU seconds by process over `n` items. */
const msPerItem = (used, n, names = Object.keys(used)) => (1000 * names.reduce((sum, k) => sum + used[k], 0)) / n;
/** The gateway's CPU ms per task. */
const gatewayMsPerTask = (used, tasks) => msPerItem(used, tasks, GATEWAY);
// Phase 2's unmeasured redelivery rounds of DELIVERIES each, before the measured one.
const WARMUP_REDELIVERIES = Number(process.env.WARMUP_REDELIVERIES ?? 2);
// Phase 2's round: this many tasks redelivered at once (default TASKS × JOBS_PER_TASK, the raw baseline's job count).
const DELIVERIES = Number(process.env.DELIVERIES ?? TASKS * JOBS_PER_TASK);
// PROFILE=<dir>: the edge, task-runner, archiver, callback-dispatcher and upstream-sim run under `node --cpu-prof`,
// their profiles written there (the bench's own process: `node --cpu-prof bench/tasks.mjs`), as does the floor
// dispatcher (`floor-dispatcher`), and deliveries-window.json with phase 2's measured round in the profiles' clock
// (µs), to cut a profile to that round, phase 1's (`tasks`) and the floor's round after it (`floor`).
// PROFILE_WITH=perf: they run under `node --perf-basic-prof` instead, for a system-wide `perf record -a -k mono` cut to
// a phase with `--time` (on-CPU samples, where --cpu-prof's are wall-clock).
const PROFILE = process.env.PROFILE;
const profiled = (name) =>
  !PROFILE
    ? []
    : process.env.PROFILE_WITH === 'perf'
      ? ['--perf-basic-prof']
      : ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, name)}`];

const { createTestCa } = gensvc('testing');
const { freePort } = gensvc('local-stack');
const { DEFAULT_REPLICATE_WEBHOOK_SECRET, SIM_FAL_USER_ID } = service('upstream-sim', 'webhooks');
const { createRedisConnection, createQueues, jobIdFor, scheduleCallback } = gensvc('queue');
const { taskRepository } = gensvc('db');
const { CallbackDeliver } = gensvc('contracts');

/**
 * The callers' POST: node:http on kept-alive connections, the cheapest correct client (fetch's WHATWG streams cost
 * this process more than the request it sends), so the load generator takes as little as it can of the cores.
 */
const callers = new Agent({ keepAlive: true });
function postJson(url, headers, json) {
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: callers,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString()) });
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The callback receiver (lib/receiver.mjs), a process of its own as a customer's is: it checks each callback's
 * signature against the workspaces' secrets (addSecret, once they are read), answers 204 at once and stamps when each
 * task's callback arrived; here are its counts, as its batches report them. `proc` is the process (its CPU, its stop).
 */
async function startReceiver(files) {
  const proc = await startNode({
    name: 'receiver',
    script: join(root, 'bench', 'lib', 'receiver.mjs'),
    nodeArgs: profiled('receiver'),
    env: { CERT_FILE: files.cert, KEY_FILE: files.key },
    port: false,
    ipc: true,
  });
  const { child } = proc;
  const reply = (key) =>
    new Promise((resolve) =>
      child.on('message', function on(m) {
        if (key in m) {
          child.off('message', on);
          resolve(m[key]);
        }
      }),
    );
  const port = await Promise.race([
    reply('listening'),
    new Promise((_, reject) =>
      child.once('exit', (code) =>
        reject(new Error(`the receiver exited (${code}) before it listened:\n${proc.output()}`)),
      ),
    ),
  ]);
  const arrivals = new Map();
  let count = 0;
  let unverified = 0;
  let handshakes = 0;
  let onCount = () => {};
  child.on('message', (m) => {
    if (!m.arrivals) return;
    for (const [taskId, at, verified] of m.arrivals) {
      if (!arrivals.has(taskId)) arrivals.set(taskId, at);
      if (!verified) unverified++;
    }
    count += m.arrivals.length;
    handshakes = m.handshakes;
    onCount(count);
  });
  const secrets = [];
  return {
    proc,
    handshakes: () => handshakes,
    secrets,
    addSecret: async (secret) => {
      const added = reply('secretAdded');
      child.send({ secret });
      await added;
      secrets.push(secret);
    },
    lastBody: async () => {
      const body = reply('lastBody');
      child.send({ lastBody: true });
      return Buffer.from(await body, 'base64');
    },
    unverified: () => unverified,
    url: `https://127.0.0.1:${port}`,
    arrivals,
    count: () => count,
    until: (n) =>
      new Promise((resolve) => {
        if (count >= n) resolve();
        else onCount = (c) => c >= n && resolve();
      }),
  };
}

/**
 * CPU seconds a process has used (lib/cpu.mjs cpuMs): what each phase cost it; `mainThread`, its event loop's alone.
 */
const cpuSeconds = (pid, opts) => cpuMs(pid, opts) / 1000;

/** The machine's cores' time so far (/proc/stat, ticks summed over every core): idle (with I/O wait) and in all. */
function coresTicks() {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return { idle: ticks[3] + ticks[4], all: ticks.slice(0, 8).reduce((a, b) => a + b, 0) };
}

/** The share of the cores' time left idle between two coresTicks() readings. */
const idleShare = (a, b) => (b.idle - a.idle) / (b.all - a.all);

/**
 * CPU seconds of what the bench brought up besides the services: the embedded Postgres (every backend, and those it
 * has reaped) and Redis, as `stores` (storeProcesses) read them, and this process (s3rver and the callers run in it).
 * The stores are those of this run alone (withStack starts them unless the environment names its own).
 */
function harnessCpuSeconds(stores) {
  const sums = { Postgres: 0, Redis: 0 };
  for (const p of stores) sums[p.store] += p.cpu;
  const self = process.cpuUsage();
  return { ...sums, 'bench (s3rver, callers)': (self.user + self.system) / 1e6 };
}

/**
 * Postgres's client backends by the service whose pool opened each (its application_name, `gensvc-<service>`, as
 * createDb names them; this bench's own connections are `bench`): pid → service. Read once the pools are warm (phase 1
 * opens none: the line below says so), so each backend's CPU is its service's statements'.
 */
async function backendServices(db) {
  const rows = await db.$queryRaw`SELECT pid, application_name AS name FROM pg_stat_activity
    WHERE backend_type = 'client backend'`;
  return new Map(rows.map((r) => [Number(r.pid), r.name.replace(/^gensvc-/, '') || 'bench']));
}

/**
 * CPU seconds of Postgres's processes in `stores` (storeProcesses) by the service each backend serves
 * (backendServices); the rest `other`.
 */
function postgresCpuByService(stores, services) {
  const sums = {};
  for (const p of stores) {
    if (p.store !== 'Postgres') continue;
    const service = services.get(p.pid) ?? 'other';
    sums[service] = (sums[service] ?? 0) + p.cpu;
  }
  return sums;
}

/**
 * The processes of the stores this bench brought up, from /proc: every descendant of this process that is a Postgres
 * (each backend) or a Redis and not one of `servicePids`, with its CPU seconds (those of its reaped children included).
 */
function storeProcesses(servicePids) {
  const procs = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      procs.push({
        pid: Number(pid),
        comm,
        ppid: Number(f[1]),
        cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100,
      });
    } catch {
      // gone meanwhile
    }
  }
  const children = new Map();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const found = [];
  const walk = (pid) => {
    for (const c of children.get(pid) ?? []) {
      if (servicePids.has(c.pid)) continue;
      if (c.comm.startsWith('postgres')) found.push({ ...c, store: 'Postgres' });
      else if (c.comm.startsWith('redis')) found.push({ ...c, store: 'Redis' });
      walk(c.pid);
    }
  };
  walk(process.pid);
  return found;
}

/**
 * How long each process waited for a core, from the scheduler's own count (/proc/<pid>/schedstat of its main thread: ns
 * on a core, ns runnable but waiting on the run queue, times it was put on a core): per process name, summed over
 * Postgres's backends and Redis. A difference of two snapshots says, for a phase, how many times each process was woken
 * to run and how long each wake-up waited before it ran: the cost of every hop between processes on a busy machine,
 * which no process's CPU time shows. `stores`: the stores' processes (storeProcesses), read with the services'.
 */
function schedSnapshot(procs, stores) {
  const read = (pid) => {
    try {
      const [, wait, slices] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
      const { r, w } = syscalls(pid);
      return { wait, slices, r, w };
    } catch {
      return undefined;
    }
  };
  const byPid = new Map();
  for (const p of procs) byPid.set(p.pid, { name: p.name, ...read(p.pid) });
  for (const p of stores) byPid.set(p.pid, { name: p.store, ...read(p.pid) });
  return byPid;
}

/** Per process name, from two schedSnapshots: wake-ups (times put on a core) and ns waited on the run queue. */
function schedDiff(before, after) {
  const out = {};
  for (const [pid, b] of after) {
    const a = before.get(pid);
    // A process absent from either snapshot (a backend that came or went) has no difference to give.
    if (!a || a.slices === undefined || b.slices === undefined) continue;
    out[b.name] ??= { slices: 0, waitNs: 0, r: 0, w: 0 };
    const o = out[b.name];
    o.slices += b.slices - a.slices;
    o.waitNs += b.wait - a.wait;
    o.r += b.r - a.r;
    o.w += b.w - a.w;
  }
  return out;
}

/**
 * Four unmeasured rawBullmq rounds of TASKS × JOBS_PER_TASK jobs: the baseline's worker code warmed before its figure.
 */
async function warmRawBullmq(env, concurrency) {
  for (let i = 0; i < 4; i++) await rawBullmq(env, TASKS * JOBS_PER_TASK, concurrency);
}

/** Raw BullMQ: `n` no-op jobs through one worker of `concurrency`; jobs/s from the first add to the last completion. */
/** Every round of this bench adds its jobs this many at a time, the baseline's in one addBulk call each. */
const BULK = 500;

/** `n` jobs named `name`, of no work, each removed as it completes, added BULK at a time. */
async function addInBulk(queue, n, name) {
  for (let i = 0; i < n; i += BULK) {
    await queue.addBulk(
      Array.from({ length: Math.min(BULK, n - i) }, (_, j) => ({
        name,
        data: { i: i + j },
        opts: { removeOnComplete: true },
      })),
    );
  }
}

/**
 * The floor dispatcher (lib/floor-deliver.mjs) at `concurrency`, started once: it sends `body` signed with `secret` to
 * `receiver`. Its round adds `n` jobs as the raw baseline does and lasts until the receiver has had them all; answers
 * jobs/s and the floor process's CPU ms per job (beside the dispatcher's per delivery, a ratio this machine's speed,
 * which moves within minutes, changes far less than either). Not one of the measured processes: its caller stops it,
 * whatever happens.
 */
async function startFloorDispatcher(env, receiver, body, secret, concurrency) {
  const prefix = `${env.QUEUE_PREFIX}-floor`;
  const floor = await startNode({
    name: 'floor dispatcher',
    script: join(root, 'bench', 'lib', 'floor-deliver.mjs'),
    nodeArgs: profiled('floor-dispatcher'),
    env: {
      REDIS_URL: env.REDIS_URL,
      NODE_EXTRA_CA_CERTS: env.NODE_EXTRA_CA_CERTS,
      FLOOR_PREFIX: prefix,
      RECEIVER_URL: receiver.url,
      SECRET: secret,
      BODY: body.toString('base64'),
      CONCURRENCY: String(concurrency),
    },
    port: false,
  });
  await new Promise((resolve, reject) => {
    floor.child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
    floor.child.once('exit', (code) =>
      reject(new Error(`the floor dispatcher exited (${code}) before it was ready:\n${floor.output()}`)),
    );
  });
  const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-floor' });
  const queues = createQueues({ connection, prefix });
  const queue = queues.get('callbacks');
  return {
    round: async (n) => {
      const before = receiver.count();
      const cpu0 = cpuSeconds(floor.child.pid);
      const cores0 = coresTicks();
      const startUs = process.hrtime.bigint();
      const started = performance.now();
      await addInBulk(queue, n, 'floor');
      await receiver.until(before + n);
      const perSecond = n / ((performance.now() - started) / 1000);
      const idle = idleShare(cores0, coresTicks());
      return {
        perSecond,
        cpuMs: (1000 * (cpuSeconds(floor.child.pid) - cpu0)) / n,
        idle,
        window: { startUs, endUs: process.hrtime.bigint() },
      };
    },
    stop: async () => {
      await floor.stop();
      await queues.close();
      connection.disconnect();
    },
  };
}

async function rawBullmq(env, n, concurrency) {
  const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-raw' });
  const prefix = `${env.QUEUE_PREFIX}-raw`;
  const queues = createQueues({ connection, prefix });
  const queue = queues.get('maintenance');
  let done = 0;
  let finish;
  const finished = new Promise((r) => (finish = r));
  const worker = new Worker('maintenance', async () => {}, { connection, prefix, concurrency });
  worker.on('completed', () => ++done === n && finish());
  const started = performance.now();
  await addInBulk(queue, n, 'noop');
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queues.close();
  connection.disconnect();
  return n / seconds;
}

await withStack(async ({ env: base, db, s3Where, ownPostgres }) => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-bench-tasks-'));
  // The run's certificates: gone with the run, however it ends.
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const ca = createTestCa('bench CA');
  const leaf = ca.issue(['localhost', '127.0.0.1']);
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'leaf.pem'), key: join(dir, 'leaf.key') };
  writeFileSync(files.ca, ca.certPem);
  writeFileSync(files.cert, leaf.certPem);
  writeFileSync(files.key, leaf.keyPem);
  const env = {
    ...base,
    NODE_EXTRA_CA_CERTS: files.ca,
    OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
    TASK_POLL_SCHEDULE: '100ms',
    TASK_RUNNER_CONCURRENCY: String(CONCURRENCY),
    ARCHIVER_CONCURRENCY: String(CONCURRENCY),
    ...(DISPATCHER_CONCURRENCY ? { CALLBACK_DISPATCHER_CONCURRENCY: DISPATCHER_CONCURRENCY } : {}),
  };
  // The outputs listener's port is chosen here: fal's JWKS is served there too (the edge fetches it over https).
  const simOutputsPort = await freePort();
  const sim = await startNode({
    name: 'upstream-sim',
    script: join(root, 'services', 'upstream-sim', 'dist', 'main.js'),
    nodeArgs: profiled('upstream-sim'),
    env: {
      LOG_LEVEL: 'warn',
      SIM_TASK_MS: String(SIM_TASK_MS),
      SIM_OUTPUTS_TLS_CERT_FILE: files.cert,
      SIM_OUTPUTS_TLS_KEY_FILE: files.key,
      SIM_OUTPUTS_PORT: String(simOutputsPort),
    },
    readyPath: '/__sim/requests',
  });
  const receiver = await startReceiver(files);
  const procs = [sim, receiver.proc];
  try {
    await seedSim(db, sim.url);
    const { auth, workspaceId } = await seedKey(db, { unlimited: true });
    const plain = await seedKey(db, { unlimited: true });
    // Provider webhooks on (WEBHOOKS=0 turns them off): the sim calls the edge back when a job ends, signed as
    // Replicate and fal sign; a task whose webhook never comes is polled by the task-runner's reconciler once it has
    // waited TASK_POLL_WEBHOOK_FALLBACK (default 30 s).
    if (process.env.WEBHOOKS !== '0') {
      const edgePort = await freePort();
      Object.assign(env, {
        PROVIDER_WEBHOOK_BASE_URL: `http://127.0.0.1:${edgePort}`,
        REPLICATE_WEBHOOK_SECRET: DEFAULT_REPLICATE_WEBHOOK_SECRET,
        FAL_WEBHOOK_USER_ID: SIM_FAL_USER_ID,
        FAL_WEBHOOK_JWKS_URL: `https://127.0.0.1:${simOutputsPort}/__sim/fal/jwks.json`,
        PORT: String(edgePort),
      });
    }
    const edge = await startService('edge', env, {
      readyPath: '/readyz',
      port: env.PORT ? Number(env.PORT) : true,
      nodeArgs: profiled('edge'),
    });
    procs.push(edge);
    const { PORT: _edgePort, ...workerEnv } = env;
    for (const name of ['task-runner', 'archiver', 'callback-dispatcher'])
      procs.push(await startService(name, workerEnv, { nodeArgs: profiled(name) }));

    /**
     * `TASKS` creations by CONCURRENCY callers; each creation's latency, and the wall time. `key` and `callbackUrl`
     * may be functions of the creation's index (the interleaved run); `latencies` holds each creation's, by index.
     */
    const createAll = async (keyOf, callbackUrlOf, count = TASKS) => {
      const ids = [];
      const latencies = [];
      const byIndex = [];
      const failures = new Map();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            const i = next++;
            const key = typeof keyOf === 'function' ? keyOf(i) : keyOf;
            const callbackUrl = typeof callbackUrlOf === 'function' ? callbackUrlOf(i) : callbackUrlOf;
            const t = performance.now();
            let body;
            // A creation that fails is reported (and retried, so every run has TASKS tasks), never hidden.
            for (let tries = 1; ; tries++) {
              const res = await postJson(`${edge.url}/api/v1/sim/text-to-image`, key, {
                model: 'sim/image-1',
                prompt: `bench ${i}`,
                size: '256x256',
                ...(callbackUrl ? { callback_url: callbackUrl } : {}),
              });
              body = res.body;
              if (res.status === 202) break;
              const reason = `${res.status} ${body.error?.code}`;
              failures.set(reason, (failures.get(reason) ?? 0) + 1);
              if (tries === 5)
                throw new Error(`create: ${res.status} ${JSON.stringify(body)}\n${edge.output().slice(-3000)}`);
            }
            latencies.push(performance.now() - t);
            byIndex[i] = performance.now() - t;
            ids.push(body.task_id);
          }
        }),
      );
      return { ids, seconds: (performance.now() - t0) / 1000, latency: percentiles(latencies), byIndex, failures };
    };
    const terminal = async (wsId) => {
      while (
        (await db.task.count({ where: { workspaceId: wsId, status: { in: ['completed', 'failed', 'canceled'] } } })) <
        TASKS
      ) {
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    // WAL flushes (each an fdatasync of the WAL, most of them a commit's) and the ms they took: pg_stat_io's from
    // Postgres 18, pg_stat_wal's before it. Their time is counted only with track_wal_io_timing, turned on here in this
    // run's own Postgres (never in one the environment names): a commit waits for its flush, so a flush's time is part
    // of every transition's.
    const [{ version }] = await db.$queryRaw`SELECT current_setting('server_version_num')::int AS version`;
    if (ownPostgres) {
      await db.$executeRawUnsafe('ALTER SYSTEM SET track_wal_io_timing = on');
      await db.$queryRawUnsafe('SELECT pg_reload_conf()');
    }
    const walSyncSql =
      version >= 180000
        ? `SELECT sum(fsyncs)::float8 AS n, sum(fsync_time)::float8 AS ms FROM pg_stat_io WHERE object = 'wal'`
        : 'SELECT wal_sync::float8 AS n, wal_sync_time::float8 AS ms FROM pg_stat_wal';
    const walSyncs = async () => (await db.$queryRawUnsafe(walSyncSql))[0];
    const xacts = async () =>
      Number(
        (
          await db.$queryRaw`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database
            WHERE datname = current_database()`
        )[0].n,
      );
    const simGet = async (path) => (await fetch(`${sim.url}${path}`)).json();
    // Commands Redis ran (total_commands_processed): each a client sent, and each one a script ran inside it (BullMQ's
    // take, completion and add scripts run 10–20 each), so the queue side's work in Redis, not its round trips. This
    // connection's own INFO counts one each.
    const stats = createRedisConnection(env.REDIS_URL, { name: 'bench-stats' });
    const redisCommands = async () => Number(/total_commands_processed:(\d+)/.exec(await stats.info('stats'))[1]);

    // 0. Creation without a callback_url, in a workspace of its own, run to the end before the timed run.
    const without = await createAll(plain.auth, null);
    await terminal(plain.workspaceId);

    // The warm-up round (see the header): its tasks and callbacks are in no figure.
    const warm = await seedKey(db, { unlimited: true });
    // The secrets the receiver checks callbacks with, as a customer reads them.
    for (const key of [auth, warm.auth])
      await receiver.addSecret(
        (await (await fetch(`${edge.url}/api/v1/me/callback-secret`, { headers: key })).json()).secret,
      );
    // One walk of /proc per reading (storeProcesses), shared by what is read at that point: each process's CPU
    // (cpu), Postgres's by service and the scheduler's counts.
    const servicePids = new Set(procs.map((p) => p.pid));
    const stores = () => storeProcesses(servicePids);
    const cpu = (walked = stores()) => ({
      ...Object.fromEntries(procs.map((p) => [p.name, cpuSeconds(p.pid)])),
      ...harnessCpuSeconds(walked),
    });
    const cpuDiff = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, b[k] - a[k]]));
    // In rounds of TASKS, each timed as phase 1 is, so the run shows how far a cold pipeline is from a warm one.
    const warmRounds = [];
    const warmIds = [];
    for (let done = 0; done < WARMUP_TASKS; ) {
      const n = Math.min(TASKS, WARMUP_TASKS - done);
      const cpu0 = cpu();
      const t0 = performance.now();
      warmIds.push(...(await createAll(warm.auth, `${receiver.url}/cb`, n)).ids);
      done += n;
      await receiver.until(done);
      const used = cpuDiff(cpu0, cpu());
      warmRounds.push({ n, perSecond: n / ((performance.now() - t0) / 1000), gatewayMs: gatewayMsPerTask(used, n) });
    }
    const warmedCallbacks = receiver.count();
    const warmedHandshakes = receiver.handshakes();

    // 3. The tasks' baseline bracket phase 1: a raw round at the callers' concurrency right before it and one right
    //    after it (their mean is the figure), after four unmeasured rounds that warm the raw worker's code as the
    //    warm-up rounds warmed the pipeline's.
    await warmRawBullmq(env, CONCURRENCY);
    const rawBefore = await rawBullmq(env, TASKS * JOBS_PER_TASK, CONCURRENCY);

    // 1. End to end.
    await fetch(`${sim.url}/__sim/requests`, { method: 'DELETE' });
    const pgServices = await backendServices(db);
    const walkedStart = stores();
    const pgStart = postgresCpuByService(walkedStart, pgServices);
    const cpuStart = cpu(walkedStart);
    const schedBefore = schedSnapshot(procs, walkedStart);
    const simBefore = await simGet('/__sim/stats');
    const xactBefore = await xacts();
    const walSyncBefore = await walSyncs();
    const redisBefore = await redisCommands();
    const started = performance.now();
    const phase1Start = process.hrtime.bigint();
    const phaseStart = new Date();
    const withCb = await createAll(auth, `${receiver.url}/cb`);
    const createdIn = withCb.seconds;
    const createdEnd = Date.now();
    await receiver.until(warmedCallbacks + TASKS);
    // Stopped as the last callback arrives: the readings below (/proc walks, a Postgres query) are not the phase's.
    const endToEnd = (performance.now() - started) / 1000;
    const phase1End = process.hrtime.bigint();
    const walkedEnd = stores();
    const cpuEndToEnd = cpuDiff(cpuStart, cpu(walkedEnd));
    const pgEnd = postgresCpuByService(walkedEnd, pgServices);
    const pgByService = Object.fromEntries(Object.keys(pgEnd).map((k) => [k, pgEnd[k] - (pgStart[k] ?? 0)]));
    const schedEndToEnd = schedDiff(schedBefore, schedSnapshot(procs, walkedEnd));
    // Postgres backends opened during the timed phase (each a fork and an authentication): none once pools are warm.
    const [opened] = await db.$queryRaw`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE backend_type = 'client backend' AND backend_start >= ${phaseStart}`;
    // Read before the raw round after phase 1, which runs on the same Redis.
    const redisPerTask = ((await redisCommands()) - redisBefore) / TASKS;
    const rawAfter = await rawBullmq(env, TASKS * JOBS_PER_TASK, CONCURRENCY);
    const xactPerTask = ((await xacts()) - xactBefore) / TASKS;
    const walSyncAfter = await walSyncs();
    const walSyncPerTask = (walSyncAfter.n - walSyncBefore.n) / TASKS;
    const walSyncMs = ownPostgres ? (walSyncAfter.ms - walSyncBefore.ms) / (walSyncAfter.n - walSyncBefore.n) : NaN;
    const simAfter = await simGet('/__sim/stats');
    const simLog = (await simGet('/__sim/requests')).data;
    const receiverHandshakes = receiver.handshakes() - warmedHandshakes;
    const tasks = await db.task.findMany({
      where: { workspaceId },
      select: {
        id: true,
        status: true,
        createdAt: true,
        startedAt: true,
        completedAt: true,
        files: { select: { createdAt: true, bytes: true } },
      },
    });
    const lag = tasks.map((t) => receiver.arrivals.get(t.id) - t.completedAt.getTime()).filter(Number.isFinite);
    const lagP = percentiles(lag);
    // The lag of callbacks of tasks completed while creations were still arriving (the machine busiest) and after.
    const lagOf = (pred) => {
      const xs = tasks
        .filter((t) => receiver.arrivals.has(t.id) && pred(t.completedAt.getTime()))
        .map((t) => receiver.arrivals.get(t.id) - t.completedAt.getTime());
      return { ...percentiles(xs), n: xs.length };
    };
    const lagDuring = lagOf((c) => c < createdEnd);
    const lagAfter = lagOf((c) => c >= createdEnd);
    // Where the lag goes, from each task's first callback job: completion → the job added (the archiver's hop),
    // added → a dispatcher took it (queue wait), taken → the receiver had the callback. A completed callback job is
    // removed as it completes, so its times are read from the queue's event stream (BullMQ's `added` and `active`
    // events, each stamped with Redis's clock in its stream id), after the phase: no reader loads Redis meanwhile.
    const hops = { added: [], waited: [], handled: [] };
    {
      const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-hops' });
      const queues = createQueues({ connection, prefix: env.QUEUE_PREFIX });
      const seen = new Map();
      const entries = await connection.xrange(
        queues.get(CallbackDeliver.queue).keys.events,
        String(phaseStart.getTime()),
        '+',
      );
      for (const [id, fields] of entries) {
        const { event, jobId } = Object.fromEntries(fields.flatMap((v, i) => (i % 2 ? [] : [[v, fields[i + 1]]])));
        const at = seen.get(jobId) ?? {};
        if ((event === 'added' || event === 'active') && at[event] === undefined)
          seen.set(jobId, { ...at, [event]: Number(id.split('-')[0]) });
      }
      for (const t of tasks) {
        const { added, active } = seen.get(jobIdFor(CallbackDeliver, [t.id, 1])) ?? {};
        const arrived = receiver.arrivals.get(t.id);
        if (added === undefined || active === undefined || !arrived) continue;
        hops.added.push(added - t.completedAt.getTime());
        hops.waited.push(active - added);
        hops.handled.push(arrived - active);
      }
      await queues.close();
      connection.disconnect();
    }
    const completed = tasks.filter((t) => t.status === 'completed').length;
    const step = (f) => percentiles(tasks.map(f).filter(Number.isFinite)).p50;
    const archivedAt = (t) => (t.files.length ? Math.max(...t.files.map((f) => f.createdAt.getTime())) : NaN);
    const budget = {
      'create (HTTP, with callback_url)': withCb.latency.p50,
      'created → submitted (queue + provider submit)': step((t) => t.startedAt - t.createdAt),
      'submitted → archived (provider job + poll waits + fetch + S3 put)': step((t) => archivedAt(t) - t.startedAt),
      'archived → completed': step((t) => t.completedAt - archivedAt(t)),
      'completed → callback received': lagP.p50,
      '  completed → callback job added': percentiles(hops.added).p50,
      '  job added → taken by a dispatcher': percentiles(hops.waited).p50,
      '  taken → callback received': percentiles(hops.handled).p50,
      'created → callback received': step((t) => receiver.arrivals.get(t.id) - t.createdAt.getTime()),
    };
    const byKind = (pred) => simLog.filter(pred).length / TASKS;
    const perTask = {
      'Postgres transactions': xactPerTask,
      'Postgres WAL flushes (fdatasync)': walSyncPerTask,
      'Redis commands run (those inside scripts included)': redisPerTask,
      'provider submits': byKind(
        (r) => r.method === 'POST' && !r.path.includes('/cancel') && !r.path.startsWith('/outputs'),
      ),
      'provider polls (status/result GETs)': byKind((r) => r.method === 'GET' && !r.path.startsWith('/outputs')),
      'output fetches (archive)': byKind((r) => r.path.startsWith('/outputs')),
      'TLS handshakes, archive fetches': (simAfter.tls_handshakes - simBefore.tls_handshakes) / TASKS,
      'TLS handshakes, callback check + deliveries': receiverHandshakes / TASKS,
      'S3 objects written (one PutObject each, image < 5 MiB)': tasks.reduce((n, t) => n + t.files.length, 0) / TASKS,
      // A task whose webhook recorded nothing and brought no poll is left to the reconciler's fallback poll (≥ 30 s).
      'tasks archived ≥ 25 s after submit (fallback poll)':
        tasks.filter((t) => archivedAt(t) - t.startedAt >= 25_000).length / TASKS,
    };

    // 2. Callback deliveries alone: a new round for every task, enqueued at once, after WARMUP_REDELIVERIES unmeasured
    //    rounds of the same size (see the header).
    const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-redeliver' });
    const queues = createQueues({ connection, prefix: env.QUEUE_PREFIX });
    // A round redelivers DELIVERIES tasks: the timed phase's, then the warm-up's (as many as the raw baseline's jobs
    // by default, so that neither figure carries a start and an end the other spreads over five times as much work).
    const redelivered = [
      ...tasks.map((t) => ({ id: t.id, workspaceId })),
      ...warmIds.map((id) => ({ id, workspaceId: warm.workspaceId })),
    ].slice(0, DELIVERIES);
    const deliveries = redelivered.length;
    const dispatcher = procs.find((p) => p.name === 'callback-dispatcher');
    const deliveryRound = async () => {
      const before = receiver.count();
      const rounds = [];
      for (const t of redelivered)
        rounds.push({ task: t, round: await taskRepository.redeliver(db, t.workspaceId, t.id) });
      const walked0 = stores();
      const cpuStart = cpu(walked0);
      const [main0, sched0, cores0] = [
        cpuSeconds(dispatcher.pid, { mainThread: true }),
        schedSnapshot(procs, walked0),
        coresTicks(),
      ];
      const handshakes = receiver.handshakes();
      const redis0 = await redisCommands();
      const startUs = process.hrtime.bigint();
      const start = performance.now();
      // Added BULK at a time, as the baseline adds its jobs, each as a task's completion adds its first attempt.
      for (let i = 0; i < rounds.length; i += BULK) {
        const chunk = rounds.slice(i, i + BULK);
        await Promise.all(
          chunk.map(({ task, round }) =>
            scheduleCallback(queues, { taskId: task.id, workspaceId: task.workspaceId }, round.attempt, {
              first: true,
            }),
          ),
        );
      }
      await receiver.until(before + deliveries);
      const seconds = (performance.now() - start) / 1000;
      const window = { startUs, endUs: process.hrtime.bigint() };
      const walked1 = stores();
      const used = cpuDiff(cpuStart, cpu(walked1));
      // Where the round's time went: the cores left idle, the dispatcher's event loop's own CPU (the rest of its CPU is
      // V8's helper threads: garbage collection, compilation), and each process's waits for a core.
      const idle = idleShare(cores0, coresTicks());
      const mainThread = cpuSeconds(dispatcher.pid, { mainThread: true }) - main0;
      const sched = schedDiff(sched0, schedSnapshot(procs, walked1));
      // Per delivery, the round's adds included (one each, as a completion's scheduleCallback makes one). Not
      // Postgres's: a backend reports its counts when idle at most once a second, later than a round this short ends.
      const redisRun = ((await redisCommands()) - redis0) / deliveries;
      // Every attempt recorded before the next round starts (a redelivery under an attempt in flight makes it stale).
      const pendingIn = [workspaceId, warm.workspaceId];
      while ((await db.task.count({ where: { workspaceId: { in: pendingIn }, callbackState: 'pending' } })) > 0)
        await new Promise((r) => setTimeout(r, 20));
      return {
        seconds,
        used,
        redisRun,
        handshakes: receiver.handshakes() - handshakes,
        window,
        idle,
        mainThread,
        sched,
      };
    };
    // Unmeasured rounds first, as bench/chat warms its gateways (V8 optimises the dispatcher's code over its first
    // thousands of deliveries); the baseline's worker is warmed by four rounds at this concurrency.
    for (let i = 0; i < WARMUP_REDELIVERIES; i++) await deliveryRound();
    await warmRawBullmq(env, DISPATCHER_IN_FLIGHT);
    // The floor: the same receiver, the same signed bytes (the last real callback's), BullMQ and one HTTPS POST per job
    // and nothing else, warmed by as many rounds as the dispatcher.
    const floor = await startFloorDispatcher(
      env,
      receiver,
      await receiver.lastBody(),
      receiver.secrets[0],
      DISPATCHER_IN_FLIGHT,
    );
    const pairs = [];
    try {
      for (let i = 0; i < WARMUP_REDELIVERIES; i++) await floor.round(deliveries);
      // Three measured rounds, each followed at once by its baseline: a raw BullMQ round of as many jobs at the
      // dispatcher's concurrency. This machine's speed moves within minutes, so each round is compared with the
      // baseline measured beside it, and the figure is the median of the three ratios (its pair the one reported).
      for (let i = 0; i < 3; i++) {
        const round = await deliveryRound();
        const rawRedis0 = await redisCommands();
        const raw = await rawBullmq(env, TASKS * JOBS_PER_TASK, DISPATCHER_IN_FLIGHT);
        // What BullMQ alone runs per job (added in bulk, removed on completion).
        const rawRedisRun = ((await redisCommands()) - rawRedis0) / (TASKS * JOBS_PER_TASK);
        const {
          perSecond: floorPerSecond,
          cpuMs: floorCpuMs,
          idle: floorIdle,
          window: floorWindow,
        } = await floor.round(deliveries);
        const perSecond = deliveries / round.seconds;
        const dispatcherCpuMs = (1000 * round.used['callback-dispatcher']) / deliveries;
        pairs.push({
          ...round,
          perSecond,
          raw,
          rawRedisRun,
          ratio: perSecond / raw,
          floorPerSecond,
          floor: floorPerSecond / raw,
          cpuMs: dispatcherCpuMs,
          floorCpuMs,
          floorIdle,
          floorWindow,
        });
      }
    } finally {
      await floor.stop();
    }
    const pair = [...pairs].sort((a, b) => a.ratio - b.ratio)[1];
    const {
      used: cpuDeliver,
      redisRun: deliverRedisRun,
      handshakes: deliverHandshakes,
      raw: rawSingle,
      rawRedisRun,
    } = pair;
    // The median pair's round in the profiles' clock (CLOCK_MONOTONIC, µs), so a profile can be cut to it.
    if (PROFILE) {
      mkdirSync(PROFILE, { recursive: true });
      const us = (t) => Number(t / 1000n);
      const window = {
        startUs: us(pair.window.startUs),
        endUs: us(pair.window.endUs),
        deliveries,
        tasks: { startUs: us(phase1Start), endUs: us(phase1End), tasks: TASKS },
        floor: { startUs: us(pair.floorWindow.startUs), endUs: us(pair.floorWindow.endUs) },
      };
      writeFileSync(join(PROFILE, 'deliveries-window.json'), JSON.stringify(window));
    }
    await queues.close();
    connection.disconnect();

    const rawPipeline = (rawBefore + rawAfter) / 2;
    stats.disconnect();

    // Counted before run 4 adds tasks of its own.
    const charges = await db.ledgerEntry.count({ where: { workspaceId, kind: 'charge' } });

    // 4. Creation with and without a callback_url interleaved (every other creation has one, each in its workspace),
    //    so both see the same load (phase 1 runs the whole pipeline beside its creations). Two passes, the second with
    //    the halves swapped; the figure is the mean of the two passes' slowdowns (pooled p50s of two passes at
    //    different speeds make a two-humped distribution whose median is unstable).
    const passes = [];
    for (const withOn of [1, 0]) {
      const has = (i) => i % 2 === withOn;
      const pass = await createAll(
        (i) => (has(i) ? auth : plain.auth),
        (i) => (has(i) ? `${receiver.url}/cb` : null),
      );
      passes.push({
        with: percentiles(pass.byIndex.filter((_, i) => has(i))).p50,
        without: percentiles(pass.byIndex.filter((_, i) => !has(i))).p50,
      });
    }

    const tasksPerSecond = TASKS / endToEnd;
    const deliveriesPerSecond = pair.perSecond;
    const floorPair = [...pairs].sort((a, b) => a.floor - b.floor)[1];
    const rawTask = rawPipeline / JOBS_PER_TASK;
    console.log(
      `bench/tasks  node ${process.version}; ${TASKS} image tasks, ${CONCURRENCY} callers and ${CONCURRENCY} jobs ` +
        `per worker (the dispatcher ${DISPATCHER_IN_FLIGHT}${DISPATCHER_CONCURRENCY ? '' : ', its default'}); sim ` +
        `job ${SIM_TASK_MS} ms; polls every 100 ms; ${WARMUP_TASKS} warm-up tasks before the timed run; ` +
        `provider webhooks ${env.PROVIDER_WEBHOOK_BASE_URL ? 'on (fallback poll 30 s)' : 'off'}; S3: ${s3Where}`,
    );
    printTable(
      ['case', 'per second', 'vs raw BullMQ', 'notes'],
      [
        [
          'raw BullMQ no-op jobs',
          int(rawSingle),
          '1.00x',
          `${TASKS * JOBS_PER_TASK} jobs, ${DISPATCHER_IN_FLIGHT} at once (the dispatcher's concurrency)`,
        ],
        [
          `raw BullMQ no-op jobs ÷ ${JOBS_PER_TASK}`,
          int(rawTask),
          '1.00x',
          `${TASKS * JOBS_PER_TASK} jobs, as tasks of ${JOBS_PER_TASK} jobs`,
        ],
        [
          'tasks end to end',
          int(tasksPerSecond),
          ratio(tasksPerSecond / rawTask),
          `create → completed → callback received; creating took ${createdIn.toFixed(1)} s`,
        ],
        [
          'callback deliveries',
          int(deliveriesPerSecond),
          ratio(pair.ratio),
          `signed HTTPS POST, attempt logged; the median of 3 rounds, each against the raw round beside it: ` +
            `${pairs.map((p) => ratio(p.ratio)).join(', ')}`,
        ],
        [
          '  floor: BullMQ + signed HTTPS POST',
          int(floorPair.floorPerSecond),
          ratio(floorPair.floor),
          `the median of 3 rounds; the same bytes to the same receiver, nothing else (lib/floor-deliver.mjs), ` +
            `after each raw round: ${pairs.map((p) => ratio(p.floor)).join(', ')}`,
        ],
        ['creations without callback_url', int(TASKS / without.seconds), '', `p50 ${ms(without.latency.p50)} ms each`],
        ['creations with callback_url', int(TASKS / withCb.seconds), '', `p50 ${ms(withCb.latency.p50)} ms each`],
      ],
    );
    const list = (xs, f) => xs.map(f).join(', ');
    console.log(
      `warm-up (unmeasured), rounds of ${TASKS}: tasks/s ${list(warmRounds, (r) => int(r.perSecond))}; gateway ` +
        `CPU ms per task ${list(warmRounds, (r) => ms(r.gatewayMs))} (timed phase: ` +
        `${ms(gatewayMsPerTask(cpuEndToEnd, TASKS))}); raw BullMQ ÷ ${JOBS_PER_TASK} right before and after ` +
        `phase 1: ${int(rawBefore / JOBS_PER_TASK)}, ${int(rawAfter / JOBS_PER_TASK)}; deliveries/s against ` +
        `raw jobs/s at ${DISPATCHER_IN_FLIGHT}, round by round: ` +
        `${list(pairs, (p) => `${int(p.perSecond)} / ${int(p.raw)}`)}`,
    );
    console.log(`completion → callback received: p50 ${ms(lagP.p50)} ms, p99 ${ms(lagP.p99)} ms (${lag.length} tasks)`);
    console.log(
      `  of tasks completed while creations arrived: p50 ${ms(lagDuring.p50)} ms (${lagDuring.n} tasks); after: p50 ` +
        `${ms(lagAfter.p50)} ms (${lagAfter.n} tasks)`,
    );
    const perMs = (o, n = TASKS) =>
      Object.entries(o)
        .map(([k, v]) => `${k} ${ms((1000 * v) / n)}`)
        .join(', ');
    console.log(
      `CPU ms per task, end to end: ${perMs(cpuEndToEnd)}; ` +
        `Postgres backends opened meanwhile (still open): ${opened.n}`,
    );
    // Postgres's share, by whose statements it ran: each backend's CPU to the service whose pool holds it ('other': the
    // checkpointer, WAL writer, autovacuum and the rest; a backend opened during the phase would count there too).
    console.log(
      `  Postgres's CPU ms per task by the service whose connections it served: ` +
        `${perMs(Object.fromEntries(Object.entries(pgByService).sort((a, b) => b[1] - a[1])))}`,
    );
    // The lag is a chain of hops between processes (the archiver's commit, Redis, the dispatcher, its read, the
    // receiver): on a machine whose cores are all busy, each hop waits on the run queue before the woken process runs.
    console.log(
      `waits for a core, end to end (the scheduler's count): per wake-up ${Object.entries(schedEndToEnd)
        .map(([k, v]) => `${k} ${ms(v.waitNs / 1e6 / v.slices)}`)
        .join(', ')} ms; ` +
        `wake-ups per task ${Object.entries(schedEndToEnd)
          .map(([k, v]) => `${k} ${(v.slices / TASKS).toFixed(1)}`)
          .join(', ')}; ` +
        // Postgres is left out: its backends talk over send/recv, which /proc's counts leave out (its figure is WAL
        // writes).
        `read / write system calls per task (/proc's syscr, syscw: a socket read or write is one) ${Object.entries(
          schedEndToEnd,
        )
          .filter(([k]) => k !== 'Postgres')
          .map(([k, v]) => `${k} ${(v.r / TASKS).toFixed(1)} / ${(v.w / TASKS).toFixed(1)}`)
          .join(', ')}` +
        (Number.isFinite(walSyncMs)
          ? `; a WAL flush (the wait of each commit) took ${ms(walSyncMs)} ms on average ` +
            `(${int(walSyncPerTask * TASKS)} flushes)`
          : ''),
    );
    console.log(
      `CPU ms per delivery, the dispatcher's against the floor worker's per job (the round after its raw round), ` +
        `round by round: ` +
        `${list(pairs, (p) => `${ms(p.cpuMs)} / ${ms(p.floorCpuMs)} = ${(p.cpuMs / p.floorCpuMs).toFixed(2)}×`)}`,
    );
    // A round at its CPU's limit leaves no core idle (the floor's rounds come close); one whose processes wait on each
    // other (a hop, a commit) leaves cores idle while its work waits on the run queue at every wake-up.
    // Processes the round woke at least once (the sim and the edge sit idle through it).
    const deliverSched = Object.entries(pair.sched).filter(([, v]) => v.slices > 0);
    console.log(
      `where the deliveries rounds' time went: the cores idle ` +
        `${list(pairs, (p) => `${Math.round(100 * p.idle)} %`)} of each round (the floor's rounds: ` +
        `${list(pairs, (p) => `${Math.round(100 * p.floorIdle)} %`)}); ` +
        `the dispatcher's CPU ms per delivery on its event loop ` +
        `${list(pairs, (p) => ms((1000 * p.mainThread) / deliveries))}, on V8's helper threads ` +
        `${list(pairs, (p) => ms((1000 * (p.used['callback-dispatcher'] - p.mainThread)) / deliveries))}; ` +
        `the median pair's waits for a core per wake-up ` +
        `${deliverSched.map(([k, v]) => `${k} ${ms(v.waitNs / 1e6 / v.slices)}`).join(', ')} ms, wake-ups per ` +
        `delivery ${deliverSched.map(([k, v]) => `${k} ${(v.slices / deliveries).toFixed(2)}`).join(', ')}`,
    );
    console.log(
      `CPU ms per callback delivery, deliveries alone: ${perMs(cpuDeliver, deliveries)}; TLS handshakes at the ` +
        `receiver meanwhile: ${deliverHandshakes}; the median pair's round of ${deliveries}, after ` +
        `${WARMUP_REDELIVERIES} unmeasured; Redis commands run per delivery (inside scripts included) ` +
        `${ms(deliverRedisRun)}, per raw BullMQ no-op job ${ms(rawRedisRun)}`,
    );
    // What the cores allow (CORES × 1000 ÷ CPU ms per item, as bench/chat and bench/evaluate print it): with every
    // process of the run, and with the gateway's alone (the sim, the receiver, S3 and the callers stand in for other
    // machines; the raw baseline runs none of them).
    const ceilings = (used, n) => ({
      all: (CORES * 1000) / msPerItem(used, n),
      gateway: (CORES * 1000) / gatewayMsPerTask(used, n),
    });
    const [tc, dc] = [ceilings(cpuEndToEnd, TASKS), ceilings(cpuDeliver, deliveries)];
    console.log(
      `what ${CORES} cores allow by CPU: tasks/s ${int(tc.all)} with every process, ${int(tc.gateway)} with the ` +
        `gateway's alone (${ratio(tc.gateway / rawTask)} raw BullMQ ÷ ${JOBS_PER_TASK}); deliveries/s ` +
        `${int(dc.all)}, ${int(dc.gateway)} with the gateway's alone (${ratio(dc.gateway / rawSingle)})`,
    );
    for (const [name, run] of [
      ['without callback_url', without],
      ['with callback_url', withCb],
    ]) {
      for (const [reason, count] of run.failures) console.log(`  ! creations ${name}: ${count} × ${reason} (retried)`);
    }
    console.log(
      `tasks completed: ${completed} of ${TASKS}; charges in the ledger: ${charges}` +
        `${charges === TASKS ? '' : '  (MISMATCH)'}; callbacks whose signature failed the check: ` +
        `${receiver.unverified()}${receiver.unverified() ? '  (MISMATCH)' : ''}`,
    );

    console.log('\nper-task time budget (p50, ms) and what each task cost (mean per task)');
    printTable(['step', 'now'], [...Object.entries({ ...budget, ...perTask }).map(([k, v]) => [k, ms(v)])]);

    const pct = (v) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${(v * 100).toFixed(0)} %` : '-');
    const createSlowdown = withCb.latency.p50 / without.latency.p50 - 1;
    const passSlowdowns = passes.map((p) => p.with / p.without - 1);
    const mixedSlowdown = (passSlowdowns[0] + passSlowdowns[1]) / 2;
    console.log(
      `creation p50 with callback_url vs without: ${pct(createSlowdown)}; interleaved (same load): ` +
        `${pct(mixedSlowdown)} (two passes: ` +
        `${passes.map((p, i) => `${pct(passSlowdowns[i])}, ${ms(p.with)} / ${ms(p.without)} ms`).join('; ')})`,
    );
    reportFigures({
      'callback deliveries': { value: deliveriesPerSecond, baseline: rawSingle },
      'completion → callback p50': { value: lagP.p50 },
      'tasks end to end': { value: tasksPerSecond, baseline: rawTask },
    });
  } finally {
    for (const p of procs.reverse()) await p.stop();
    callers.destroy();
  }
});
