// The task transitions and the hold's settle and release find their row by primary key, in the plans a connection
// keeps (migration 20261126090000): never through the state indexes, whose range grows with the tasks in flight.
import { makeTask, useTestContext } from '@gensvc/testing';
import pg from 'pg';
import { withTx } from '../client';
import {
  ADVANCE_POLL,
  MARK_SUBMITTED,
  OUTPUT_KINDS,
  RECORD_OUTPUT,
  RECORD_WEBHOOK_OUTPUTS,
  taskRepository,
} from './task.repository';

const ctx = useTestContext();

const INDEXES = [
  'Task_pkey',
  'Task_status_updatedAt_idx',
  'Reservation_pkey',
  'Reservation_state_expiresAt_idx',
] as const;
type Scans = Record<(typeof INDEXES)[number], number>;
// Index scans this backend has made and not yet reported to the shared statistics (it reports them between
// transactions, at most once a second): read twice in one transaction, their difference is what ran between.
const SCANS = `SELECT relname::text AS name, pg_stat_get_xact_numscans(oid)::int AS n
  FROM pg_class WHERE relname = ANY ($1::text[])`;
const scansOf = (rows: { name: string; n: number }[]) => Object.fromEntries(rows.map((r) => [r.name, r.n])) as Scans;

const difference = (before: Scans, after: Scans) =>
  Object.fromEntries(INDEXES.map((name) => [name, after[name] - before[name]])) as Scans;

let live: { id: string; reservationId: string }[];
let client: pg.Client;

beforeAll(async () => {
  // A gateway's tables: a thousand finished tasks with their settled holds, analysed at a quiet moment (nothing in
  // flight, as autovacuum may find it), then a burst of tasks. The state indexes then look far cheaper than the primary
  // keys (the status index is partial over live tasks; no hold is held), which is what made a kept plan read every
  // task or hold in flight (bench/task-statements).
  const template = await makeTask(ctx.db);
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "Reservation"
      SELECT (jsonb_populate_record(r, jsonb_build_object('id', r.id || '_' || g, 'state', 'settled'))).*
      FROM "Reservation" r, generate_series(1, 1000) g WHERE r.id = $1`,
    template.reservationId,
  );
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "Task"
      SELECT (jsonb_populate_record(t, jsonb_build_object('id', t.id || '_' || g, 'status', 'completed',
                                                          'reservationId', t."reservationId" || '_' || g))).*
      FROM "Task" t, generate_series(1, 1000) g WHERE t.id = $1`,
    template.id,
  );
  await taskRepository.finish(ctx.db, template.id, { status: 'canceled' });
  await ctx.db.$executeRawUnsafe('ANALYZE "Task", "Reservation"');
  const made = [];
  for (let i = 0; i < 16; i++)
    made.push(await makeTask(ctx.db, { workspaceId: template.workspaceId, apiKeyId: template.apiKeyId! }));
  live = made.map((t) => ({ id: t.id, reservationId: t.reservationId! }));
});

// Each test on a connection of its own, as each of a pool's connections plans and keeps its statements.
beforeEach(async () => {
  client = new pg.Client({ connectionString: ctx.env.DATABASE_URL });
  await client.connect();
});
afterEach(() => client.end());

/**
 * Runs `run(i)` for tasks 0…6 on one connection, as a pool's connection runs a prepared statement (its first five runs
 * planned for their values, the rest from the plan it keeps), then once more in a transaction: the index scans of that
 * last run.
 */
async function keptPlanScans(run: (i: number) => Promise<unknown>): Promise<Scans> {
  for (let i = 0; i < 7; i++) await run(i);
  await client.query('BEGIN');
  try {
    const before = scansOf((await client.query(SCANS, [INDEXES])).rows);
    await run(7);
    return difference(before, scansOf((await client.query(SCANS, [INDEXES])).rows));
  } finally {
    await client.query('COMMIT');
  }
}

it('submits, polls and records the result of a task by primary-key probes, its hold settled the same way', async () => {
  const submit = await keptPlanScans(async (i) => {
    const values = [live[i]!.id, 'ch', `up_${i}`, null, new Date().toISOString()];
    const { rowCount } = await client.query({ name: 'submit', text: MARK_SUBMITTED, values });
    expect(rowCount).toBe(1);
  });
  expect(submit).toMatchObject({ Task_pkey: 1, Task_status_updatedAt_idx: 0 });

  const poll = await keptPlanScans(async (i) => {
    const { rowCount } = await client.query({
      name: 'poll',
      text: `${ADVANCE_POLL} RETURNING 1`,
      values: [live[i]!.id, 1, new Date().toISOString()],
    });
    expect(rowCount).toBe(1);
  });
  expect(poll).toMatchObject({ Task_pkey: 1, Task_status_updatedAt_idx: 0 });

  // gensvc_task_record_output: the task's row lock and its UPDATE, then gensvc_settle's UPDATE of the hold.
  const output = JSON.stringify({
    outputs: [{ kind: 'image', url: 'https://provider.example/a.png', archive_status: 'pending' }],
  });
  const result = await keptPlanScans(async (i) => {
    const { rows } = await client.query({
      name: 'output',
      text: RECORD_OUTPUT,
      values: [live[i]!.id, output, '40000', `led_plan_${i}`, new Date().toISOString()],
    });
    expect(rows).toEqual([expect.objectContaining({ charged: '40000' })]);
  });
  expect(result).toMatchObject({
    Task_status_updatedAt_idx: 0,
    Reservation_pkey: 1,
    Reservation_state_expiresAt_idx: 0,
  });
});

it('gives a hold back by a primary-key probe (gensvc_release)', async () => {
  const release = await keptPlanScans(async (i) => {
    const { rows } = await client.query({
      name: 'release',
      text: 'SELECT gensvc_release($1) AS released',
      values: [live[8 + i]!.reservationId],
    });
    expect(rows).toEqual([{ released: true }]);
  });
  expect(release).toMatchObject({ Reservation_pkey: 1, Reservation_state_expiresAt_idx: 0 });
});

it('ends a task and completes an archived one by primary-key probes, through Prisma as well', async () => {
  // These two run through Prisma (planned for their values on each call): a canceled task (its hold already given back
  // above, so the release finds nothing) and a completion that finds its output still pending.
  const scans = async (fn: (tx: Parameters<Parameters<typeof withTx>[1]>[0]) => Promise<unknown>) =>
    withTx(ctx.db, async (tx) => {
      const before = scansOf(await tx.$queryRawUnsafe(SCANS, [...INDEXES]));
      await fn(tx);
      return difference(before, scansOf(await tx.$queryRawUnsafe(SCANS, [...INDEXES])));
    });
  expect(await scans((tx) => taskRepository.finish(tx, live[15]!.id, { status: 'canceled' }))).toMatchObject({
    Task_pkey: 1,
    Task_status_updatedAt_idx: 0,
  });
  expect(await taskRepository.find(ctx.db, live[15]!.id)).toMatchObject({ status: 'canceled' });
  expect(await scans((tx) => taskRepository.completeIfArchived(tx, live[0]!.id))).toMatchObject({
    Task_pkey: 1,
    Task_status_updatedAt_idx: 0,
  });
});

it("locks a webhook group's rows by primary-key probes from plans kept since its first call", async () => {
  // Seven webhooks whose jobs are not these tasks' (no task is running): the group takes its locks on the seven Task
  // rows and their holds, keys and workspaces, and records nothing. The first call's plans are the kept ones (the
  // function runs with force_generic_plan), so one call shows them; the tables' sequential scans are counted too.
  const items = JSON.stringify(
    live.slice(0, 7).map((t, i) => ({
      task: t.id,
      upstreamId: `up_other_${i}`,
      provider: 'replicate',
      outputs: {},
      ledgerId: `led_hook_${i}`,
    })),
  );
  const TABLES = ['Task', 'Reservation'];
  await client.query('BEGIN');
  try {
    const read = async () =>
      scansOf((await client.query(SCANS, [[...INDEXES, ...TABLES]])).rows) as Scans &
        Record<'Task' | 'Reservation', number>;
    const before = await read();
    const { rows } = await client.query(RECORD_WEBHOOK_OUTPUTS, [items, OUTPUT_KINDS, new Date().toISOString()]);
    const after = await read();
    expect(rows.map((r) => r.outcome)).toEqual(Array(7).fill('not_this'));
    expect({ Task: after.Task - before.Task, Reservation: after.Reservation - before.Reservation }).toEqual({
      Task: 0,
      Reservation: 0,
    });
    // The holds through their primary key (one scan for the seven), none through the state indexes.
    const scans = difference(before, after);
    expect(scans).toMatchObject({ Task_status_updatedAt_idx: 0, Reservation_state_expiresAt_idx: 0 });
    expect(scans.Reservation_pkey).toBeGreaterThan(0);
    expect(scans.Task_pkey).toBeGreaterThan(0);
  } finally {
    await client.query('ROLLBACK');
  }
  // Planned once per connection: the function carries the setting (pg_stat_statements, which would count the plans, is
  // not loaded on every Postgres this suite runs on).
  const { rows } = await client.query(
    "SELECT proconfig FROM pg_proc WHERE proname = 'gensvc_task_record_webhook_outputs'",
  );
  expect(rows).toEqual([{ proconfig: ['plan_cache_mode=force_generic_plan'] }]);
});
