// The built task runner as a real process: it runs a task submitted through its queue, its reconciler picks up a
// task whose submit job never existed (as after a Redis flush), and it shuts down cleanly on SIGTERM.
import { TaskSubmit } from '@gensvc/contracts';
import { taskRepository } from '@gensvc/db';
import { createQueues, enqueue, type Queues } from '@gensvc/queue';
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

const ctx = useTestContext({ LOG_LEVEL: 'info', TASK_POLL_SCHEDULE: '50ms', RECONCILE_INTERVAL: '300ms' });
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

it('runs tasks from its queue and from its reconciler, and exits 0 on SIGTERM', async () => {
  await addSimModel(ctx.db, sim.url, {
    id: 'sim/image-main',
    kind: 'image',
    unitPrice: 1_000n,
    channels: [{ name: 'main-fal', kind: 'fal', upstreamModel: 'sim/image-1' }],
  });
  const create = () => makeTask(ctx.db, { model: 'sim/image-main', amount: 1_000n });
  const queued = await create();
  await enqueue(queues, TaskSubmit, { taskId: queued.id, workspaceId: queued.workspaceId });
  // No job at all for this one: only the reconciler can find it.
  const orphan = await create();

  proc = spawnService('task-runner', ctx.env);
  await waitForOutput(proc, 'task runner ready');
  for (const id of [queued.id, orphan.id]) {
    const done = await eventually(
      async () => {
        const t = await taskRepository.find(ctx.db, id);
        return t?.output ? t : null;
      },
      `task ${id} to get its output`,
      15_000,
    );
    expect(done).toMatchObject({ status: 'running', cost: 1_000n });
  }

  expect(await proc.stop()).toBe(0);
  expect(proc.output()).toContain('shutdown phase done');
  proc = undefined;
}, 60_000);
