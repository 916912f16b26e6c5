// The built task runner as a real process, SIGKILLed while tasks whose first provider job failed are being resubmitted
// (the resubmit committed, the new submission held up at the provider), then started again: every task still ends
// with exactly one output and one charge, and each workspace's balance is down by exactly the price.
import { providerJobsOf } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { createQueues, scheduleSubmit, taskJobRef, type Queues } from '@gensvc/queue';
import {
  addSimModel,
  eventually,
  makeTask,
  spawnService,
  useTestContext,
  waitForOutput,
  type ServiceProcess,
} from '@gensvc/testing';
import { startSim, type Sim } from '../../upstream-sim/src/index';

const ctx = useTestContext({
  LOG_LEVEL: 'info',
  TASK_POLL_SCHEDULE: '50ms',
  RECONCILE_INTERVAL: '300ms',
  TASK_MAX_RESUBMITS: '2',
});
let sim: Sim;
let queues: Queues;
let proc: ServiceProcess | undefined;

beforeAll(async () => {
  sim = await startSim({ taskDurationMs: 200 });
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
});
afterAll(async () => {
  await proc?.stop('SIGKILL');
  await queues.close();
  await sim.close();
});

const PRICE = 1_000n;

it('completes and charges each task once when killed between a failed job and its resubmission', async () => {
  const tasks: Awaited<ReturnType<typeof makeTask>>[] = [];
  for (const kind of ['replicate', 'fal'] as const) {
    await addSimModel(ctx.db, sim.url, {
      id: `sim/image-kill-${kind}`,
      kind: 'image',
      unitPrice: PRICE,
      channels: [{ name: `kill-${kind}`, kind, upstreamModel: 'sim/image-1' }],
    });
    for (let i = 0; i < 3; i++) tasks.push(await makeTask(ctx.db, { model: `sim/image-kill-${kind}`, amount: PRICE }));
  }
  // Every first job fails (the model crashed) 2 s in, after the resubmissions' creates are held up for 3 s at the
  // provider.
  sim.faults.add({ job: { outcome: 'fail', error: 'worker crashed', durationMs: 2_000 }, times: tasks.length });
  proc = spawnService('task-runner', ctx.env);
  await waitForOutput(proc, 'task runner ready');
  for (const t of tasks) await scheduleSubmit(queues, taskJobRef(t));
  await eventually(
    async () => {
      const rows = await Promise.all(tasks.map((t) => taskRepository.find(ctx.db, t.id)));
      return rows.every((r) => r?.status === 'running') ? true : null;
    },
    'every task to be submitted',
    15_000,
  );
  sim.faults.add({ operation: 'create', latencyMs: 3_000 });

  // Killed once a resubmission is under way: its task is queued again with the failed job recorded.
  await eventually(
    async () => {
      const rows = await Promise.all(tasks.map((t) => taskRepository.find(ctx.db, t.id)));
      return rows.some((r) => r?.status === 'queued' && providerJobsOf(r.providerJobs).length === 1) ? true : null;
    },
    'a resubmission to start',
    15_000,
  );
  await proc.stop('SIGKILL');
  sim.faults.clear();

  proc = spawnService('task-runner', ctx.env);
  await waitForOutput(proc, 'task runner ready');
  for (const t of tasks) {
    const done = await eventually(
      async () => {
        const row = await taskRepository.find(ctx.db, t.id);
        return row?.output ? row : null;
      },
      `task ${t.id} to get its output`,
      90_000,
    );
    expect(done).toMatchObject({ status: 'running', cost: PRICE });
    expect(providerJobsOf(done.providerJobs).length).toBeGreaterThanOrEqual(1);
    const charges = await ctx.db.ledgerEntry.findMany({ where: { taskId: t.id, kind: 'charge' } });
    expect(charges).toHaveLength(1);
    const ws = await ctx.db.workspace.findUniqueOrThrow({ where: { id: t.workspaceId } });
    // makeTask's workspace starts at 10 units; the hold became the one charge.
    expect(ws.balance).toBe(10_000_000n - PRICE);
  }
  expect(await proc.stop()).toBe(0);
  proc = undefined;
}, 180_000);
