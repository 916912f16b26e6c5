// Statements that take a batch as JSON or an array find each row by primary key, whatever the table holds. The planner
// guesses 100 rows for a JSON function's output, and against that guess a join or `IN` on it is planned as a scan of
// every row of a table of some thousands of rows: milliseconds per batch. Here the tables hold 5,000 rows, where that
// happened, and each statement runs in a transaction whose own counters (pg_stat_xact_user_tables) must show no scan.
import { makeKey, makeTask, makeWorkspace, useTestContext } from '@gensvc/testing';
import { withTx } from '../client';
import type { DbClient } from '../client';
import { billingRepository } from './billing.repository';
import { callbackRepository } from './callback.repository';
import { taskRepository } from './task.repository';

const ctx = useTestContext();
const ROWS = 5_000;

beforeAll(async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 0n });
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "Task" (id, "workspaceId", model, operation, input, status, "updatedAt")
     SELECT 'tsk_fill' || g, $1, 'sim/img-1', 'image', '{}', 'completed', now() FROM generate_series(1, ${ROWS}) g`,
    ws.id,
  );
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "Reservation" (id, "workspaceId", "requestId", amount, state, "expiresAt")
     SELECT 'res_fill' || g, $1, 'r', 0, 'settled', now() FROM generate_series(1, ${ROWS}) g`,
    ws.id,
  );
  await ctx.db.$executeRawUnsafe('ANALYZE "Task", "Reservation"');
});

/** Runs `fn` in a transaction and answers how many sequential scans of `table` it made. */
async function scansOf(table: string, fn: (tx: DbClient) => Promise<unknown>): Promise<number> {
  return withTx(ctx.db, async (tx) => {
    const read = async () => {
      const [row] = await tx.$queryRawUnsafe<{ n: bigint }[]>(
        'SELECT coalesce(seq_scan, 0) AS n FROM pg_stat_xact_user_tables WHERE relname = $1',
        table,
      );
      return Number(row?.n ?? 0);
    };
    const before = await read();
    await fn(tx);
    return (await read()) - before;
  });
}

it('reads and records a group of delivery attempts by primary key', async () => {
  const tasks = [];
  for (let i = 0; i < 13; i++) {
    const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
    tasks.push(task);
  }
  const now = new Date();
  const reads = tasks.map((t) => ({ taskId: t.id, now }));
  expect(await scansOf('Task', (tx) => callbackRepository.attemptContexts(tx, ctx.secrets, reads))).toBe(0);
  const entries = tasks.map((t) => ({
    now,
    entry: {
      input: {
        workspaceId: t.workspaceId,
        taskId: t.id,
        attempt: 1,
        deliveryId: `dlv_${t.id}_1`,
        url: 'https://hooks.example/cb',
        statusCode: 200,
        durationMs: 5,
        error: null,
        responseHead: null,
        at: now,
      },
      decidedOn: { callbackRoundStart: 1 },
      step: { attempt: 1, to: 'delivered' as const, at: now },
    },
  }));
  let records: Awaited<ReturnType<typeof taskRepository.recordDeliveryAttempts>> = [];
  expect(
    await scansOf('Task', async (tx) => {
      records = await taskRepository.recordDeliveryAttempts(tx, entries);
    }),
  ).toBe(0);
  expect(records.map((r) => [r.recorded, r.applied, r.task?.id])).toEqual(tasks.map((t) => [true, true, t.id]));
});

it('charges a batch against two leases by primary key', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000n });
  const { key } = await makeKey(ctx.db, ws.id, { spendCap: null });
  const lease = () =>
    billingRepository.lease(ctx.db, {
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: 'r',
      min: 1_000n,
      want: 1_000n,
      ttlMs: 60_000,
    });
  const leases = [await lease(), await lease()];
  const charges = leases.map((l, i) => ({ id: `led_plan_${i}`, lease: l.id, cost: 10n, requestId: `req_${i}` }));
  let charged = new Set<string>();
  expect(
    await scansOf('Reservation', async (tx) => {
      charged = await billingRepository.chargeLeases(tx, charges, 60_000);
    }),
  ).toBe(0);
  expect(charged).toEqual(new Set(charges.map((c) => c.id)));
});
