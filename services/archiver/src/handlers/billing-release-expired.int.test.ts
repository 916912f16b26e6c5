// billing.release-expired through the archiver's maintenance worker, against real Postgres and Redis: holds whose
// owner died are given back, live holds and fresh Idempotency-Key records are left alone.
import { BillingReleaseExpired } from '@gensvc/contracts';
import { billingRepository, idempotencyRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { closeWorkers, createQueueEvents, createQueues, enqueue, type Queues } from '@gensvc/queue';
import { makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import type { QueueEvents, Worker } from 'bullmq';
import { startMaintenanceWorker } from '../maintenance-worker';

const ctx = useTestContext();
let queues: Queues;
let events: QueueEvents;
let worker: Worker;

beforeAll(async () => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  events = createQueueEvents({ queue: 'maintenance', connection: ctx.redis, prefix: ctx.config.queuePrefix });
  await events.waitUntilReady();
  const logger = createLogger({ service: 'release-expired-test', level: 'silent' });
  worker = startMaintenanceWorker(
    { config: ctx.config, db: ctx.db, s3: ctx.s3, logger, queues },
    { connection: ctx.redis, prefix: ctx.config.queuePrefix },
  );
});
afterAll(async () => {
  await closeWorkers([worker], 10_000);
  await events.close();
  await queues.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runJob() {
  const job = await enqueue(queues, BillingReleaseExpired, {});
  return job.waitUntilFinished(events, 10_000) as Promise<{ released: number; forgotten: number }>;
}

async function money(workspaceId: string, keyId: string) {
  const [charges, key, ws] = await Promise.all([
    ctx.db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' } }),
    ctx.db.apiKey.findUniqueOrThrow({ where: { id: keyId } }),
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
  ]);
  return { charges, reserved: key.reserved, balance: ws.balance };
}

it('releases holds whose owner died (past their expiry), and leaves live ones alone', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 50_000_000n });
  const { key } = await makeKey(ctx.db, ws.id);
  const hold = (ttlMs: number) =>
    billingRepository.reserve(ctx.db, {
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: 'req_sweep',
      amount: 70_000n,
      ttlMs,
    });
  const dead = await hold(1);
  const live = await hold(60_000);
  await sleep(5);
  expect(await runJob()).toMatchObject({ released: 1 });
  const states = await ctx.db.reservation.findMany({
    where: { id: { in: [dead.id, live.id] } },
    select: { id: true, state: true },
  });
  expect(Object.fromEntries(states.map((r) => [r.id, r.state]))).toEqual({ [dead.id]: 'released', [live.id]: 'held' });
  expect(await money(ws.id, key.id)).toMatchObject({ reserved: 70_000n, balance: 50_000_000n - 70_000n, charges: [] });
  await billingRepository.release(ctx.db, live.id);
});

it('forgets Idempotency-Key records past their 24 h, and keeps the others', async () => {
  const ws = await makeWorkspace(ctx.db);
  const dayAgo = new Date(Date.now() - 24 * 3600 * 1000 - 1_000);
  await idempotencyRepository.begin(ctx.db, ws.id, 'old', 'h1', dayAgo);
  await idempotencyRepository.begin(ctx.db, ws.id, 'fresh', 'h2');
  expect(await runJob()).toMatchObject({ forgotten: 1 });
  expect((await ctx.db.idempotencyRecord.findMany({ where: { workspaceId: ws.id } })).map((r) => r.key)).toEqual([
    'fresh',
  ]);
});
