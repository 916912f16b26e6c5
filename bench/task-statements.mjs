// bench/task-statements: the Postgres statements of a task's life and of its callback deliveries, replayed through
// the repositories alone (no services, queues, S3 or HTTP), to measure what Postgres spends on each (issue 12).
//
// Per task, in the pipeline's order (README "The task pipeline"): taskRepository.create (gensvc_reserve + INSERT), the
// runner's find and markSubmitted, a find and one advancePoll, a find and recordOutput (gensvc_task_record_output →
// gensvc_settle; it also reads the workspace's retention, which the archive job carries), the archiver's recordArchive
// with its file row (completion; a job made with the result reads nothing first). Then DELIVERY_ROUNDS
// rounds of one delivery per task, as the dispatcher makes them: redeliver (the bench's new round, not counted), then
// per group of GROUP tasks one attemptContexts and one recordDeliveryAttempts (delivered).
//
// CONCURRENCY callers share one pool of POOL connections, as a worker's concurrency shares its pool. Postgres CPU is
// read from /proc (utime + stime of every process under the postmaster, reaped children included) around each phase,
// so it needs a Postgres of this machine: the bench brings up its own (embedded) unless DATABASE_URL names one.
// PG_STATS=1 with a Postgres that preloads pg_stat_statements (track = all, track_planning = on) prints, per
// statement of the timed phases: calls, plans, mean execution and planning time, shared blocks hit/read/dirtied and
// WAL bytes per call (nested plpgsql statements included).
//
//   TASKS (default 600), CONCURRENCY (16), POOL (4), GROUP (6), DELIVERY_ROUNDS (3), PRELOAD (2000 finished tasks made
//   first and analysed, so the tables hold what a running gateway's do), BACKLOG (0). Usage: npm run bench -- task-statements
import { readFileSync, readdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gensvc } from './lib/gensvc.mjs';

const TASKS = Number(process.env.TASKS ?? 600);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const POOL = Number(process.env.POOL ?? 4);
const GROUP = Number(process.env.GROUP ?? 6);
const DELIVERY_ROUNDS = Number(process.env.DELIVERY_ROUNDS ?? 3);
const PRELOAD = Number(process.env.PRELOAD ?? 2000);
const PG_STATS = process.env.PG_STATS === '1';
// Tasks created before the timed phases that stay queued through them (a backlog the runner has not reached, their
// holds held): what the state indexes hold besides the CONCURRENCY tasks in flight.
const BACKLOG = Number(process.env.BACKLOG ?? 0);
// STATS=quiet (default): the tables are analysed once, after the preload, with nothing in flight, and autovacuum does
// not analyse them again during the run: as a gateway's tables between two of autovacuum's analyses, which come every
// 10 % of a table's rows changed (every ~15,000 tasks for a table of 100,000), not every 250 row changes as for this
// bench's 2,000 rows. STATS=auto leaves autovacuum as configured.
const STATS = process.env.STATS ?? 'quiet';

const { startStack } = gensvc('local-stack');
const { createDb, closeDb, migrate, workspaceRepository, apiKeyRepository, taskRepository, callbackRepository, newId, generatedFile } = gensvc('db');
const { newApiKey, SCOPES } = gensvc('auth');
const { createRequire } = await import('node:module');
const pg = createRequire(join(process.cwd(), 'libs', 'db', 'package.json'))('pg');

/** CPU seconds of the postmaster listening on `port` and every process under it (reaped children included). */
function postgresCpu(postmasterPid) {
  const procs = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      procs.set(Number(pid), { ppid: Number(f[1]), own: (Number(f[11]) + Number(f[12])) / 100, reaped: (Number(f[13]) + Number(f[14])) / 100 });
    } catch {
      // gone meanwhile
    }
  }
  let sum = 0;
  const walk = (pid) => {
    const p = procs.get(pid);
    if (!p) return;
    sum += p.own + (pid === postmasterPid ? p.reaped : 0);
    for (const [child, c] of procs) if (c.ppid === pid) walk(child);
  };
  walk(postmasterPid);
  return sum;
}

async function pool(n, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < n) await fn(next++);
  }));
}

async function main() {
  let stack;
  let url = process.env.DATABASE_URL;
  if (!url) {
    stack = await startStack({ dataDir: mkdtempSync(join(tmpdir(), 'gensvc-bench-')), persistent: false, env: {}, need: { postgres: true, redis: false, s3: false } });
    url = stack.env.DATABASE_URL;
  }
  try {
    await migrate(url);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const [{ pid: backend }] = (await admin.query('SELECT pg_backend_pid() AS pid')).rows;
    const postmaster = Number(readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
    const db = createDb(url, { max: POOL });
    const ws = await workspaceRepository.create(db, { name: 'bench', tier: 'payg', balance: 10n ** 15n });
    const k = newApiKey();
    const key = await apiKeyRepository.create(db, { workspaceId: ws.id, name: 'bench', prefix: k.prefix, hash: k.hash, scopes: [...SCOPES] });
    const workspace = { id: ws.id, tier: 'payg', retentionDays: null };

    const create = (id, i) =>
      taskRepository.create(db, {
        id, workspaceId: ws.id, apiKeyId: key.id, requestId: newId('req'), model: 'sim/image-1', operation: 'text-to-image',
        input: { prompt: `bench ${i}`, size: '256x256' }, callbackUrl: 'https://hooks.example/cb', amount: 40n, deadlineAt: new Date(Date.now() + 600_000),
      });
    const life = async (i) => {
      const id = newId('tsk');
      const now = () => new Date();
      await create(id, i);
      await taskRepository.find(db, id);
      await taskRepository.markSubmitted(db, id, { channelId: 'ch_sim', upstreamId: `up_${i}`, upstreamUrls: { get: `https://sim.example/p/${i}` } });
      await taskRepository.find(db, id);
      await taskRepository.advancePoll(db, id, 1);
      await taskRepository.find(db, id);
      const output = { outputs: [{ kind: 'image', url: `https://sim.example/outputs/${i}.png`, archive_status: 'pending' }] };
      const { retention } = await taskRepository.recordOutput(db, id, output, 40n);
      const fileId = newId('file');
      const file = generatedFile({
        taskId: id, outputIndex: 0, workspace: { id: ws.id, ...retention }, createdAt: now(), bytes: 4096, sha256: 'a'.repeat(64),
        media: { extension: 'png', contentType: 'image/png' }, location: { fileId, storageKey: `ws/${ws.id}/${fileId}.png`, url: `https://files.example/${fileId}.png` },
      });
      const { completed } = await taskRepository.recordArchive(db, { taskId: id, outputIndex: 0, patch: { archive_status: 'archived', svc_file_id: fileId, svc_url: 'https://files.example/x' }, file });
      if (!completed) throw new Error(`task ${id} not completed`);
      return id;
    };
    const deliverAll = async (ids) => {
      const groups = [];
      for (let i = 0; i < ids.length; i += GROUP) groups.push(ids.slice(i, i + GROUP));
      let next = 0;
      await Promise.all(Array.from({ length: Math.max(1, Math.floor(CONCURRENCY / GROUP)) }, async () => {
        while (next < groups.length) {
          const group = groups[next++];
          const contexts = await callbackRepository.attemptContexts(db, group);
          const at = new Date();
          await taskRepository.recordDeliveryAttempts(db, group.map((id) => {
            const c = contexts.get(id);
            const attempt = c.task.callbackRoundStart;
            return {
              input: { workspaceId: ws.id, taskId: id, attempt, deliveryId: `dlv_${id}_${attempt}`, url: c.task.callbackUrl, statusCode: 200, durationMs: 3, error: null, responseHead: null, at },
              decidedOn: { callbackRoundStart: c.task.callbackRoundStart },
              step: { attempt, to: 'delivered', at },
            };
          }));
        }
      }));
    };
    const runTasks = async (n) => {
      const ids = [];
      await pool(n, async (i) => ids.push(await life(i)));
      return ids;
    };

    // Preload: finished and delivered tasks, so the tables hold rows as a gateway's do; then analysed, as autovacuum would.
    if (PRELOAD) await deliverAll(await runTasks(PRELOAD));
    await admin.query('ANALYZE');
    if (STATS === 'quiet') {
      for (const table of ['Task', 'Reservation', 'CallbackAttempt', 'File', 'LedgerEntry']) {
        await admin.query(`ALTER TABLE "${table}" SET (autovacuum_analyze_threshold = 100000000)`);
      }
    }
    await pool(BACKLOG, (i) => create(newId('tsk'), i));
    // Warm: every pooled connection past its first five runs of each statement (plan cache), the JIT of this process.
    await deliverAll(await runTasks(Math.max(CONCURRENCY * 8, 100)));
    if (PG_STATS) await admin.query('SELECT pg_stat_statements_reset()');
    // Index reads of the timed phases: backends report them when idle or when they end (closeDb, below).
    const indexReads = async () =>
      new Map((await admin.query(`SELECT indexrelname AS name, idx_scan::float8 AS scans, idx_tup_read::float8 AS read FROM pg_stat_user_indexes`)).rows.map((r) => [r.name, r]));
    await new Promise((r) => setTimeout(r, 1500));
    const indexesBefore = await indexReads();

    const c0 = postgresCpu(postmaster);
    const t0 = performance.now();
    const ids = await runTasks(TASKS);
    const taskSeconds = (performance.now() - t0) / 1000;
    const c1 = postgresCpu(postmaster);
    let deliverCpu = 0;
    for (let r = 0; r < DELIVERY_ROUNDS; r++) {
      for (const id of ids) await taskRepository.redeliver(db, ws.id, id);
      const d0 = postgresCpu(postmaster);
      await deliverAll(ids);
      deliverCpu += postgresCpu(postmaster) - d0;
    }
    console.log(`bench/task-statements: ${TASKS} tasks, ${CONCURRENCY} callers on ${POOL} connections, groups of ${GROUP}, ${PRELOAD} tasks preloaded, ${BACKLOG} queued meanwhile, statistics ${STATS}`);
    console.log(`Postgres CPU ms per task: ${((1000 * (c1 - c0)) / TASKS).toFixed(3)} (${(TASKS / taskSeconds).toFixed(0)} tasks/s)`);
    console.log(`Postgres CPU ms per delivery: ${((1000 * deliverCpu) / (TASKS * DELIVERY_ROUNDS)).toFixed(3)}`);
    await closeDb(db);
    await new Promise((r) => setTimeout(r, 500));
    const indexRows = [];
    for (const [name, after] of await indexReads()) {
      const before = indexesBefore.get(name) ?? { scans: 0, read: 0 };
      const scans = after.scans - before.scans;
      if (scans > 0) indexRows.push({ index: name, 'scans per task': (scans / TASKS).toFixed(2), 'entries read per scan': ((after.read - before.read) / scans).toFixed(2) });
    }
    console.log(`index scans of the timed phases (${TASKS} tasks, ${DELIVERY_ROUNDS} delivery rounds):`);
    console.table(indexRows.sort((x, y) => x.index.localeCompare(y.index)));
    if (PG_STATS) {
      const { rows } = await admin.query(`
        SELECT calls, plans, round(mean_exec_time::numeric, 4) AS exec_ms, round(mean_plan_time::numeric, 4) AS plan_ms,
          round(shared_blks_hit::numeric / calls, 1) AS hit, round(shared_blks_read::numeric / calls, 1) AS read,
          round(shared_blks_dirtied::numeric / calls, 1) AS dirtied, round(wal_bytes::numeric / calls) AS wal_b, toplevel,
          regexp_replace(left(query, 150), '\\s+', ' ', 'g') AS query
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND calls >= ${TASKS / 2}
          AND query NOT LIKE '%pg_stat_statements%'
        ORDER BY total_exec_time + total_plan_time DESC`);
      console.table(rows);
    }
    await admin.end();
  } finally {
    await stack?.stop();
  }
}

await main();
