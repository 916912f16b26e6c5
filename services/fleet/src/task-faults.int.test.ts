// Nothing is lost: 200 generation tasks with callbacks run through real processes (edge,
// task-runner, archiver, callback-dispatcher) against the upstream-sim's Replicate and fal protocols, while the
// task-runner and the dispatcher are SIGKILLed and started again, and Redis loses every key of the deployment once.
// Every task must end completed with its output archived, every callback must arrive at least once with a valid
// signature, no task may be charged twice, and the ledger must balance.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { billingRepository, callbackRepository, modelRepository } from '@gensvc/db';
import { freePort } from '@gensvc/local-stack';
import {
  addSimChannel,
  deleteKeys,
  eventually,
  jsonOf,
  makeKey,
  makeWorkspace,
  sharedTestCa,
  spawnService,
  startTlsServer,
  useTestContext,
  waitForHttp,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import { verifyCallback } from '@gensvc/webhooks';
import { startSim, type Sim } from '../../upstream-sim/src/index';

const TASKS = 200;
const IMAGE_PRICE = 40_000n;
const VIDEO_PRICE_PER_SECOND = 50_000n;
const VIDEO_SECONDS = 2;

const FILE_BASE_URL = 'https://files.gensvc.test';
const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  FILE_BASE_URL,
  TASK_POLL_SCHEDULE: '200ms,300ms',
  TASK_DEADLINE: '10m',
  RECONCILE_INTERVAL: '1s',
  CALLBACK_RETRY_SCHEDULE: '0,1s,2s,3s,5s',
  CALLBACK_TIMEOUT_MS: '3000',
});

const scratch = mkdtempSync(join(tmpdir(), 'gensvc-faults-'));
let sim: Sim;
let receiver: TlsTestServer;
const procs = new Map<string, ServiceProcess>();
let edgeUrl = '';
let env: Record<string, string> = {};

interface Received {
  deliveryId: string;
  taskId: string;
  status: string;
  outputUrl: string | undefined;
  archiveStatus: string | undefined;
}
const received: Received[] = [];
const rejected: string[] = [];
let secrets: string[] = [];
/** Every 10th task's first delivery is answered 500, so retries run through the kills and the flush too. */
const failedOnce = new Set<string>();

function receive(req: IncomingMessage, res: ServerResponse) {
  const parts: Buffer[] = [];
  req.on('data', (d: Buffer) => parts.push(d));
  req.on('end', () => {
    const raw = Buffer.concat(parts);
    try {
      const verified = verifyCallback(raw, req.headers, secrets, { toleranceSeconds: 300 });
      const body = JSON.parse(raw.toString('utf8')) as {
        task_id: string;
        status: string;
        output?: { url?: string; archive_status?: string };
      };
      if (body.task_id !== verified.taskId)
        throw new Error(`SVC-Task-Id ${verified.taskId} is not the body's ${body.task_id}`);
      const index = Number(createHash('sha256').update(body.task_id).digest()[0]);
      if (index % 10 === 0 && !failedOnce.has(body.task_id)) {
        failedOnce.add(body.task_id);
        res.statusCode = 500;
        return res.end('try again');
      }
      received.push({
        deliveryId: verified.deliveryId ?? 'missing',
        taskId: body.task_id,
        status: body.status,
        outputUrl: body.output?.url,
        archiveStatus: body.output?.archive_status,
      });
      res.statusCode = 204;
      res.end();
    } catch (e) {
      rejected.push((e as Error).message);
      res.statusCode = 400;
      res.end();
    }
  });
}

function start(name: string, extra: Record<string, string> = {}): ServiceProcess {
  const proc = spawnService(name, { ...env, ...extra });
  procs.set(name, proc);
  return proc;
}

beforeAll(async () => {
  const { ca, leaf } = sharedTestCa();
  const caFile = join(scratch, 'ca.pem');
  writeFileSync(caFile, ca.certPem);
  sim = await startSim({ outputs: { tls: { key: leaf.keyPem, cert: leaf.certPem } }, taskDurationMs: 400 });
  receiver = await startTlsServer(receive);

  const replicate = await addSimChannel(ctx.db, sim.url, { name: 'faults-replicate', kind: 'replicate' });
  const fal = await addSimChannel(ctx.db, sim.url, { name: 'faults-fal', kind: 'fal' });
  for (const [id, kind, unitPrice] of [
    ['sim/image-1', 'image', IMAGE_PRICE],
    ['sim/video-1', 'video', VIDEO_PRICE_PER_SECOND],
  ] as const) {
    await modelRepository.create(ctx.db, {
      id,
      kind,
      unitPrice,
      routes: [replicate, fal].map((c) => ({ channelId: c.id, upstreamModel: id })),
    });
  }

  const port = await freePort();
  edgeUrl = `http://127.0.0.1:${port}`;
  env = { ...ctx.env, NODE_EXTRA_CA_CERTS: caFile, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  const edge = start('edge', { PORT: String(port), LOG_LEVEL: 'error' });
  for (const name of ['task-runner', 'archiver', 'callback-dispatcher']) start(name);
  await waitForHttp(`${edgeUrl}/readyz`, edge);
}, 120_000);

afterAll(async () => {
  await Promise.all([...procs.values()].map((p) => p.stop()));
  await receiver?.close();
  await sim?.close();
  rmSync(scratch, { recursive: true, force: true });
});

it('loses no task, delivers every callback, and charges each task once through kills and a Redis flush', async () => {
  const startBalance = 1_000_000_000n;
  const ws = await makeWorkspace(ctx.db, { balance: startBalance });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } });
  const { key, secret } = await makeKey(ctx.db, ws.id);
  const auth = { authorization: `Bearer ${secret}` };
  secrets = [(await jsonOf(await fetch(`${edgeUrl}/api/v1/me/callback-secret`, { headers: auth }))).secret];
  expect(secrets[0]).toMatch(/^whsec_/);

  const created: string[] = [];
  const create = async (i: number) => {
    const video = i % 2 === 1;
    const res = await fetch(`${edgeUrl}/api/v1/sim/${video ? 'text-to-video' : 'text-to-image'}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: video ? 'sim/video-1' : 'sim/image-1',
        prompt: `fault run ${i}`,
        size: video ? '320x240' : '256x256',
        ...(video ? { duration_seconds: VIDEO_SECONDS } : {}),
        callback_url: `${receiver.url}/hooks/${i}`,
      }),
    });
    const body = await jsonOf(res);
    if (res.status !== 202)
      throw new Error(`task ${i}: ${res.status} ${JSON.stringify(body)}\n${procs.get('edge')!.output().slice(-4000)}`);
    created.push(body.task_id);
  };

  // Ten callers at a time; the faults happen while tasks are being created, polled, archived and called back.
  const unfinished = () => ctx.db.task.count({ where: { workspaceId: ws.id, NOT: { callbackState: 'delivered' } } });
  let inFlightAtKill = 0;
  let inFlightAtFlush = 0;
  let next = 0;
  const faults = (async () => {
    await eventually(() => created.length >= 60, 'sixty tasks created', 60_000);
    inFlightAtKill = await unfinished();
    await Promise.all(['task-runner', 'callback-dispatcher'].map((name) => procs.get(name)!.stop('SIGKILL')));
    start('task-runner');
    start('callback-dispatcher');
    await eventually(() => created.length >= 120, 'a hundred and twenty tasks created', 60_000);
    // Everything the deployment keeps in Redis: queued, delayed and active jobs, schedules, locks, rate windows.
    inFlightAtFlush = await unfinished();
    await deleteKeys(ctx.redis, `${ctx.env.QUEUE_PREFIX}*`);
  })();
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < TASKS) await create(next++);
    }),
  );
  await faults;
  expect(created).toHaveLength(TASKS);
  // The faults hit work in progress, not an idle fleet.
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(inFlightAtFlush).toBeGreaterThan(0);

  // Every task completes and every callback arrives (at least once), however long the recovery takes.
  let done = 0;
  await eventually(
    async () => {
      done = await ctx.db.task.count({
        where: { workspaceId: ws.id, status: 'completed', callbackState: 'delivered' },
      });
      return done === TASKS;
    },
    'every task completed and its callback delivered',
    180_000,
    500,
  ).catch(async (e) => {
    const states = await ctx.db.task.groupBy({
      by: ['status', 'callbackState'],
      where: { workspaceId: ws.id },
      _count: true,
    });
    const outputs = [...procs.entries()].map(([n, p]) => `--- ${n}\n${p.output().slice(-3000)}`).join('\n');
    throw new Error(`${(e as Error).message}: ${done} of ${TASKS}; ${JSON.stringify(states)}\n${outputs}`);
  });

  const tasks = await ctx.db.task.findMany({ where: { workspaceId: ws.id } });
  expect(tasks.map((t) => t.status)).toEqual(Array(TASKS).fill('completed'));
  expect(rejected).toEqual([]);
  const deliveredTasks = new Set(received.map((r) => r.taskId));
  expect([...deliveredTasks].sort()).toEqual([...created].sort());
  for (const r of received) {
    expect(r.status).toBe('completed');
    expect(r.archiveStatus).toBe('archived');
    expect(r.outputUrl?.startsWith(`${FILE_BASE_URL}/`)).toBe(true);
  }
  // The receiver's 500s were retried: each such task was attempted at least twice.
  expect(failedOnce.size).toBeGreaterThan(0);
  for (const taskId of failedOnce)
    expect((await callbackRepository.attempts(ctx.db, taskId)).length).toBeGreaterThanOrEqual(2);
  // A delivery id names one attempt: the same id twice is the same attempt sent again (a dispatcher killed mid-way).
  const byDelivery = new Map<string, string>();
  for (const r of received) {
    expect(byDelivery.get(r.deliveryId) ?? r.taskId).toBe(r.taskId);
    byDelivery.set(r.deliveryId, r.taskId);
  }

  // Money: one charge per task, at its price; nothing held; the ledger balances.
  const price = (t: (typeof tasks)[number]) =>
    t.model === 'sim/video-1' ? VIDEO_PRICE_PER_SECOND * BigInt(VIDEO_SECONDS) : IMAGE_PRICE;
  const charges = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
  const perTask = new Map<string, bigint[]>();
  for (const c of charges) perTask.set(c.taskId!, [...(perTask.get(c.taskId!) ?? []), -c.amount]);
  for (const t of tasks) {
    expect(perTask.get(t.id)).toEqual([price(t)]);
    expect(t.cost).toBe(price(t));
  }
  const total = tasks.reduce((sum, t) => sum + price(t), 0n);
  expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id, state: 'held' } })).toBe(0);
  const after = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
  expect(after.balance).toBe(startBalance - total);
  // The opening balance is a top-up entry: with nothing held, the ledger sums to the balance.
  expect(await billingRepository.ledgerTotal(ctx.db, ws.id)).toBe(after.balance);
  expect((await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).spent).toBe(total);

  // Outputs: one archived file per task, in the workspace library.
  expect(
    await ctx.db.file.count({ where: { workspaceId: ws.id, source: 'generated', archiveStatus: 'archived' } }),
  ).toBe(TASKS);
}, 300_000);
