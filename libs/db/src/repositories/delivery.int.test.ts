// The dispatcher's statements against real Postgres: an attempt's read, and its record with its decision.
import { makeTask, useTestContext } from '@gensvc/testing';
import pg from 'pg';
import { withTx } from '../client';
import { ATTEMPT_CONTEXT, callbackRepository } from './callback.repository';
import { readAttemptContext } from '../testing';
import { taskRepository } from './task.repository';

const ctx = useTestContext();

async function finishedTask() {
  const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
  await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
  return task;
}

const attempt = (task: { id: string; workspaceId: string }, k: number, statusCode: number, at: Date) => ({
  workspaceId: task.workspaceId,
  taskId: task.id,
  attempt: k,
  deliveryId: `dlv_${task.id}_${k}`,
  url: 'https://hooks.example/cb',
  statusCode,
  durationMs: 7,
  error: statusCode >= 300 ? 'http_status: the receiver answered 500.' : null,
  responseHead: null,
  at,
});

it('reads an attempt context in one statement, as Prisma reads the rows (times, money)', async () => {
  const [a, b] = [await finishedTask(), await finishedTask()];
  const at = new Date(Date.UTC(2026, 10, 25, 12, 0, 0, 123));
  await taskRepository.recordDeliveryAttempt(ctx.db, {
    input: attempt(b, 1, 500, at),
    decidedOn: { callbackRoundStart: 1 },
    step: null,
  });
  expect(await readAttemptContext(ctx.db, ctx.secrets, 'tsk_none')).toBeNull();
  for (const id of [a.id, b.id]) {
    const row = (await taskRepository.find(ctx.db, id))!;
    expect((await readAttemptContext(ctx.db, ctx.secrets, id))!.task).toEqual({
      id,
      workspaceId: row.workspaceId,
      status: 'canceled',
      model: row.model,
      operation: row.operation,
      output: row.output,
      reserved: row.reserved,
      cost: row.cost,
      errorCode: row.errorCode,
      errorMessage: row.errorMessage,
      channelId: row.channelId,
      upstreamId: row.upstreamId,
      providerJobs: row.providerJobs,
      callbackUrl: row.callbackUrl,
      callbackState: 'pending',
      callbackRoundStart: 1,
      createdAt: row.createdAt,
      startedAt: row.startedAt,
      completedAt: row.completedAt,
    });
  }
  expect((await readAttemptContext(ctx.db, ctx.secrets, a.id))!.last).toBeNull();
  const context = await readAttemptContext(ctx.db, ctx.secrets, b.id, at);
  expect(context!.last).toEqual({ attempt: 1, statusCode: 500, createdAt: at, durationMs: 7 });
  // Inside a transaction the statement runs through Prisma, with the same answer.
  expect(await withTx(ctx.db, (tx) => readAttemptContext(tx, ctx.secrets, b.id, at))).toEqual(context);
});

it('records an attempt with its decision, applied only while its task is as it was read', async () => {
  const [delivered, rerun, redelivered, parked] = [
    await finishedTask(),
    await finishedTask(),
    await finishedTask(),
    await finishedTask(),
  ];
  const at = new Date(Date.UTC(2026, 10, 25, 12, 0, 1, 456));
  const now = new Date(Date.UTC(2026, 10, 25, 12, 0, 2, 789));
  // A run of attempt 1 of `rerun` recorded it already; `redelivered` got a new round after its attempt 1 was read.
  await taskRepository.recordDeliveryAttempt(ctx.db, {
    input: attempt(rerun, 1, 500, at),
    decidedOn: { callbackRoundStart: 1 },
    step: null,
  });
  await taskRepository.recordDeliveryAttempt(ctx.db, {
    input: attempt(redelivered, 1, 500, at),
    decidedOn: { callbackRoundStart: 1 },
    step: null,
  });
  expect(await taskRepository.redeliver(ctx.db, redelivered.workspaceId, redelivered.id)).toEqual({ attempt: 2 });

  const entries = [
    {
      input: attempt(delivered, 1, 200, at),
      decidedOn: { callbackRoundStart: 1 },
      step: { attempt: 1, to: 'delivered', at },
    },
    {
      input: attempt(rerun, 1, 200, at),
      decidedOn: { callbackRoundStart: 1 },
      step: { attempt: 1, to: 'delivered', at },
    },
    {
      input: attempt(redelivered, 2, 500, at),
      decidedOn: { callbackRoundStart: 1 },
      step: { attempt: 2, to: 'pending' },
    },
    { input: attempt(parked, 5, 500, at), decidedOn: { callbackRoundStart: 1 }, step: { attempt: 5, to: 'parked' } },
  ] as const;
  const records = [];
  for (const entry of entries) records.push(await taskRepository.recordDeliveryAttempt(ctx.db, entry, now));
  expect(records).toEqual([
    {
      recorded: true,
      applied: true,
      task: { id: delivered.id, workspaceId: delivered.workspaceId, callbackState: 'pending', callbackRoundStart: 1 },
    },
    {
      recorded: false,
      applied: false,
      task: { id: rerun.id, workspaceId: rerun.workspaceId, callbackState: 'pending', callbackRoundStart: 1 },
    },
    {
      recorded: true,
      applied: false,
      task: {
        id: redelivered.id,
        workspaceId: redelivered.workspaceId,
        callbackState: 'pending',
        callbackRoundStart: 2,
      },
    },
    {
      recorded: true,
      applied: true,
      task: { id: parked.id, workspaceId: parked.workspaceId, callbackState: 'pending', callbackRoundStart: 1 },
    },
  ]);
  expect(await taskRepository.find(ctx.db, delivered.id)).toMatchObject({
    callbackState: 'delivered',
    deliveredAt: at,
    updatedAt: at,
  });
  expect(await taskRepository.find(ctx.db, rerun.id)).toMatchObject({ callbackState: 'pending', deliveredAt: null });
  expect(await taskRepository.find(ctx.db, redelivered.id)).toMatchObject({
    callbackState: 'pending',
    callbackRoundStart: 2,
  });
  expect(await taskRepository.find(ctx.db, parked.id)).toMatchObject({ callbackState: 'parked', updatedAt: now });
  // The re-run's row is the first run's: its outcome was not overwritten.
  expect(await callbackRepository.attempts(ctx.db, rerun.id)).toMatchObject([
    { attempt: 1, statusCode: 500, createdAt: at },
  ]);
  expect(await callbackRepository.attempts(ctx.db, delivered.id)).toMatchObject([
    { attempt: 1, statusCode: 200, durationMs: 7, createdAt: at },
  ]);
});

it('reads and records several attempts in one statement each, as one by one', async () => {
  const tasks = [await finishedTask(), await finishedTask(), await finishedTask()];
  const at = new Date(Date.UTC(2026, 10, 25, 12, 0, 0, 123));
  const now = new Date(at.getTime() + 1000);
  const reads = [
    ...tasks.map((t) => ({ taskId: t.id, now })),
    { taskId: 'tsk_none', now },
    { taskId: tasks[0]!.id, now },
  ];
  const grouped = await callbackRepository.attemptContexts(ctx.db, ctx.secrets, reads);
  const single = await Promise.all(reads.map((r) => readAttemptContext(ctx.db, ctx.secrets, r.taskId, now)));
  expect(grouped).toEqual(single);
  expect(grouped[3]).toBeNull();

  // Delivered, failed (a retry follows: marked as moved), and two runs of one attempt: one row, one update.
  const [delivered, failed, twice] = tasks as [(typeof tasks)[0], (typeof tasks)[0], (typeof tasks)[0]];
  const entry = (t: typeof delivered, statusCode: number, to: 'delivered' | 'pending') => ({
    now,
    entry: {
      input: attempt(t, 1, statusCode, at),
      decidedOn: { callbackRoundStart: 1 },
      step: to === 'delivered' ? { attempt: 1, to, at } : { attempt: 1, to },
    },
  });
  const records = await taskRepository.recordDeliveryAttempts(ctx.db, [
    entry(delivered, 200, 'delivered'),
    entry(failed, 500, 'pending'),
    entry(twice, 200, 'delivered'),
    entry(twice, 200, 'delivered'),
  ]);
  expect(records.map((r) => [r.recorded, r.applied])).toEqual([
    [true, true],
    [true, true],
    [true, true],
    [false, false],
  ]);
  expect(await taskRepository.find(ctx.db, delivered.id)).toMatchObject({
    callbackState: 'delivered',
    deliveredAt: at,
  });
  expect(await taskRepository.find(ctx.db, failed.id)).toMatchObject({ callbackState: 'pending', updatedAt: now });
  expect(await taskRepository.find(ctx.db, twice.id)).toMatchObject({ callbackState: 'delivered' });
  expect(await callbackRepository.attempts(ctx.db, twice.id)).toHaveLength(1);
});

it('reads by index probes whatever the File table holds, in the plan a connection keeps', async () => {
  // A thousand tasks, each with its archived output's library row, analysed: a table of the size bench/tasks makes.
  const template = await finishedTask();
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "Task" SELECT (jsonb_populate_record(t, jsonb_build_object('id', t.id || '_' || g))).*
      FROM "Task" t, generate_series(1, 1000) g WHERE t.id = $1`,
    template.id,
  );
  await ctx.db.$executeRawUnsafe(
    `INSERT INTO "File" (id, "workspaceId", source, purpose, filename, "contentType", bytes, "storageKey", "taskId",
                         "outputIndex", "expiresAt")
     SELECT 'file_' || id, "workspaceId", 'generated', 'output', 'a.png', 'image/png', 1, 'k/' || id, id, 0,
            now() + interval '1 day'
     FROM "Task" WHERE "workspaceId" = $1`,
    template.workspaceId,
  );
  await ctx.db.$executeRawUnsafe('ANALYZE "Task", "File", "CallbackAttempt"');
  const ids = (
    await ctx.db.task.findMany({ where: { workspaceId: template.workspaceId }, select: { id: true }, take: 8 })
  ).map((t) => t.id);
  // One connection, as each of the pool's: the statement prepared once, run six times, then the plan it runs from
  // then on.
  const client = new pg.Client({ connectionString: ctx.env.DATABASE_URL });
  await client.connect();
  try {
    const read = (n: number) => `EXECUTE s(${client.escapeLiteral(ids[n]!)})`;
    await client.query(`PREPARE s(text) AS ${ATTEMPT_CONTEXT}`);
    for (let n = 1; n <= 6; n++) expect((await client.query(read(n))).rowCount).toBe(1);
    const [{ generic_plans }] = (
      await client.query(`SELECT generic_plans FROM pg_prepared_statements WHERE name = 's'`)
    ).rows;
    // Kept: no run after the fifth is planned again.
    expect(Number(generic_plans)).toBeGreaterThan(0);
    const plan = (await client.query(`EXPLAIN ${read(7)}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('File_taskId_outputIndex_key');
    expect(plan).not.toMatch(/Seq Scan on "(File|Task)"/);
  } finally {
    await client.end();
  }
});
