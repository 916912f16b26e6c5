// The task runner in-process against the upstream-sim speaking Replicate's predictions API and fal's queue API, with
// real Postgres and Redis: submit, delayed polls, outputs recorded and settled, failures released, the deadline,
// cancels reaching the provider, stale polls, and failover between channels.
import { verifyFileToken } from '@gensvc/auth';
import {
  ArchiveOutput,
  CallbackDeliver,
  TaskCancel,
  TaskPoll,
  TaskSubmit,
  type GenerationInput,
  type TaskOperationName,
} from '@gensvc/contracts';
import { fileRepository, newId, taskRepository, type TaskRow } from '@gensvc/db';
import { enqueue, jobIdFor, scheduleSubmit, taskJobRef, type Queues } from '@gensvc/queue';
import { addSimModel, createQueuedTask, eventually, makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startSim, type JobFault, type Sim } from '../../upstream-sim/src/index';
import { taskPoll } from './handlers/task-poll';
import type { TaskHandlerDeps } from './handlers/task-steps';
import { taskSubmit } from './handlers/task-submit';
import type { TaskChannelKind } from './providers/providers';
import { startWorker, type TaskWorkerUnderTest } from './worker-under-test';

const ctx = useTestContext({ TASK_POLL_SCHEDULE: '50ms,50ms,100ms' });
let sim: Sim;
let runner: TaskWorkerUnderTest;
let queues: Queues;

/** Job runs that threw: none should (a handler's outcomes are return values; a throw is a retry or a bug). */
const jobFailures: string[] = [];

beforeAll(async () => {
  sim = await startSim({ taskDurationMs: 300 });
  runner = await startWorker(ctx);
  runner.worker.on('failed', (job, err) => jobFailures.push(`${job?.id}: ${err.message}`));
  queues = runner.queues;
});
afterAll(async () => {
  await runner?.close();
  await sim?.close();
});
afterEach(() => {
  sim.faults.clear();
  expect(jobFailures.splice(0)).toEqual([]);
});

const PRICE = 40_000n;
const BALANCE = 10_000_000n;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
let serial = 0;

interface Setup {
  model: string;
  /** Channel names in priority order (the first is tried first). */
  channels: string[];
  channelIds: string[];
}

/** A model of `kind` served by `count` channels of the protocol, the first with the highest priority. */
async function setup(protocol: TaskChannelKind, kind: 'image' | 'video', count = 1): Promise<Setup> {
  const n = ++serial;
  const names = Array.from({ length: count }, (_, i) => `${protocol}-${n}-${String.fromCharCode(97 + i)}`);
  const { model, channelIds } = await addSimModel(ctx.db, sim.url, {
    id: `sim/${kind}-${protocol}-${n}`,
    kind,
    unitPrice: PRICE,
    channels: names.map((name, i) => ({ name, kind: protocol, priority: count - i, upstreamModel: `sim/${kind}-1` })),
  });
  return { model: model.id, channels: names, channelIds };
}

interface TaskSpec {
  operation?: TaskOperationName;
  input?: Partial<GenerationInput>;
  callbackUrl?: string | null;
  deadlineMs?: number;
  /** Leave the submit job out (the test runs the handler itself). */
  noSubmit?: boolean;
}

/** A workspace and key, a task created as the edge creates it (hold + queued row), and its submit job. */
async function createTask(s: Setup, spec: TaskSpec = {}) {
  const ws = await makeWorkspace(ctx.db, { balance: BALANCE });
  const { key } = await makeKey(ctx.db, ws.id);
  const operation = spec.operation ?? (s.model.includes('/video') ? 'text-to-video' : 'text-to-image');
  const input: GenerationInput = {
    prompt: 'a lighthouse at dusk',
    width: 1024,
    height: 768,
    ...(operation.endsWith('video') && { duration_seconds: 3 }),
    ...spec.input,
  };
  // The deadline from the creation's own clock reading, so the task's deadline is exactly deadlineMs after its
  // creation.
  const now = new Date();
  const task = await createQueuedTask(
    ctx.db,
    {
      id: newId('tsk'),
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: `req_${newId('res')}`,
      model: s.model,
      operation,
      input: input as never,
      callbackUrl: spec.callbackUrl === undefined ? null : spec.callbackUrl,
      amount: PRICE,
      deadlineAt: new Date(now.getTime() + (spec.deadlineMs ?? 30_000)),
    },
    now,
  );
  if (!spec.noSubmit) await scheduleSubmit(queues, taskJobRef(task));
  return { task, ws, key };
}

/** The task once `ready` holds for it. */
const taskWhen = (id: string, ready: (t: TaskRow) => boolean, what: string, timeoutMs?: number) =>
  eventually(
    async () => {
      const t = await taskRepository.find(ctx.db, id);
      return t && ready(t) ? t : null;
    },
    `task ${id} ${what}`,
    timeoutMs,
  );

/** The task once the provider's part is over: its output recorded, or ended. */
const settled = (id: string, timeoutMs = 10_000) =>
  taskWhen(
    id,
    (t) => t.output !== null || ['failed', 'canceled', 'completed'].includes(t.status),
    'to settle',
    timeoutMs,
  );
const submitted = (id: string) => taskWhen(id, (t) => t.upstreamId !== null, 'to be submitted');

/** A context for running a handler directly, as run `attemptsMade + 1` of a job of 5 attempts. */
const direct = (attemptsMade: number) => ({ job: { id: 'direct', attemptsMade, opts: { attempts: 5 } } as never });
/** The handlers' deps with a first poll a minute away, so only what the test runs moves the task. */
const slowPolls = (deps: TaskHandlerDeps): TaskHandlerDeps => ({
  ...deps,
  config: { ...deps.config, tasks: { ...deps.config.tasks, pollScheduleMs: [60_000] } },
});

async function money(workspaceId: string, reservationId: string) {
  const [ws, charges, reservation] = await Promise.all([
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
    ctx.db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' } }),
    ctx.db.reservation.findUniqueOrThrow({ where: { id: reservationId } }),
  ]);
  return { balance: ws.balance, charges, reservation: reservation.state };
}

const jobOf = (queue: 'tasks' | 'archive' | 'callbacks', id: string) => queues.get(queue).getJob(id);
/** The job once it has run to completion (read in one go: its return value comes with its finish time). */
const completedJob = (id: string) =>
  eventually(async () => {
    const job = await jobOf('tasks', id);
    return job?.finishedOn && !job.failedReason ? job : null;
  }, `job ${id} to complete`);
const requestsTo = (channel: string) => sim.requests().filter((r) => r.channel === channel);
const cancelsTo = (channel: string) => requestsTo(channel).filter((r) => r.path.endsWith('/cancel'));
/** Until the sim has accepted a cancel of the channel's job. */
const cancelAccepted = (channel: string) =>
  eventually(() => cancelsTo(channel).some((r) => r.status !== null && r.status < 300), 'the provider cancel');
const createsTo = (channel: string) =>
  requestsTo(channel).filter((r) => r.method === 'POST' && !r.path.endsWith('/cancel'));
const fault = (channel: string, job: JobFault) => sim.faults.add({ channel, job });

describe.each<TaskChannelKind>(['replicate', 'fal'])('%s', (protocol) => {
  it('runs an image task: PNG output recorded pending archive, cost settled once, archive jobs added', async () => {
    const s = await setup(protocol, 'image');
    // A job that outlasts several polls however loaded the machine (at the sim's 300 ms, a slow submit could find it
    // done at the first poll, and the test would not see the polls it is about).
    fault(s.channels[0]!, { durationMs: 1_500 });
    const { task, ws } = await createTask(s);
    const done = await settled(task.id);

    expect(done).toMatchObject({ status: 'running', channelId: s.channelIds[0], cost: PRICE, errorCode: null });
    expect(done.upstreamId).toEqual(expect.any(String));
    const outputs = (done.output as { outputs: Record<string, unknown>[] }).outputs;
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({
      kind: 'image',
      archive_status: 'pending',
      url: expect.stringMatching(/\/outputs\/[\w-]+\.png$/),
    });
    const png = Buffer.from(await (await fetch(outputs[0]!.url as string)).arrayBuffer());
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);

    const after = await money(ws.id, task.reservationId!);
    expect(after.reservation).toBe('settled');
    expect(after.charges).toHaveLength(1);
    expect(after.charges[0]).toMatchObject({ amount: -PRICE, taskId: task.id, model: s.model });
    expect(after.balance).toBe(BALANCE - PRICE);

    // The poll that found it done completed (its outcome is stored as JSON).
    const poll = await completedJob(jobIdFor(TaskPoll, [task.id, done.attempts]));
    expect(poll.returnvalue).toEqual({ outcome: 'succeeded', outputs: 1, charged: PRICE.toString() });
    const archive = await jobOf('archive', jobIdFor(ArchiveOutput, [task.id, 0]));
    expect(archive?.data).toMatchObject({ taskId: task.id, outputIndex: 0 });
    // The provider was polled until it finished, each poll a job of its own.
    expect(done.attempts).toBeGreaterThan(1);
    expect(requestsTo(s.channels[0]!).filter((r) => r.method === 'GET').length).toBeGreaterThanOrEqual(done.attempts);
  });

  it('runs a video task and records the duration', async () => {
    const s = await setup(protocol, 'video');
    const { task } = await createTask(s, { input: { duration_seconds: 4 } });
    const done = await settled(task.id);
    const outputs = (done.output as { outputs: Record<string, unknown>[] }).outputs;
    expect(outputs).toEqual([
      expect.objectContaining({
        kind: 'video',
        duration: 4,
        archive_status: 'pending',
        url: expect.stringMatching(/\.mp4$/),
      }),
    ]);
    const mp4 = Buffer.from(await (await fetch(outputs[0]!.url as string)).arrayBuffer());
    expect(mp4.subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect(done.cost).toBe(PRICE);
  });

  it('fails with upstream_error when the model fails, restores the balance exactly and adds the callback', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { outcome: 'fail', error: 'CUDA out of memory (simulated)' });
    const { task, ws } = await createTask(s, { callbackUrl: 'https://receiver.example/hook' });
    const done = await settled(task.id);
    expect(done).toMatchObject({
      status: 'failed',
      errorCode: 'upstream_error',
      output: null,
      cost: null,
      callbackState: 'pending',
    });
    expect(done.errorMessage).toContain('CUDA out of memory');
    const after = await money(ws.id, task.reservationId!);
    expect(after).toEqual({ balance: BALANCE, charges: [], reservation: 'released' });
    const callback = await jobOf('callbacks', jobIdFor(CallbackDeliver, [task.id, 1]));
    expect(callback?.data).toMatchObject({ taskId: task.id, workspaceId: ws.id, attempt: 1 });
  });

  it('adds no callback for a failed task without a callback_url', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { outcome: 'fail' });
    const { task } = await createTask(s);
    expect(await settled(task.id)).toMatchObject({ status: 'failed', callbackState: 'none' });
    expect(await jobOf('callbacks', jobIdFor(CallbackDeliver, [task.id, 1]))).toBeUndefined();
  });

  it('fails with content_rejected when the content checker refuses', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { outcome: 'nsfw' });
    const { task, ws } = await createTask(s);
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'content_rejected' });
    expect((await money(ws.id, task.reservationId!)).balance).toBe(BALANCE);
  });

  it('times a stuck job out at its deadline with upstream_timeout and cancels it at the provider', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { outcome: 'stuck' });
    const { task, ws } = await createTask(s, { deadlineMs: 800, callbackUrl: 'https://receiver.example/hook' });
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'upstream_timeout' });
    expect(done.errorMessage).toMatch(/no result within 800 ms/);
    // At the deadline, not a poll interval or more after it.
    expect(done.completedAt!.getTime()).toBeGreaterThanOrEqual(task.deadlineAt!.getTime());
    expect(done.completedAt!.getTime() - task.deadlineAt!.getTime()).toBeLessThan(500);
    await cancelAccepted(s.channels[0]!);
    expect((await money(ws.id, task.reservationId!)).balance).toBe(BALANCE);
    expect(await jobOf('callbacks', jobIdFor(CallbackDeliver, [task.id, 1]))).toBeDefined();
  });

  it('cancels mid-run: the provider cancel reaches the sim and the next poll does nothing', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { durationMs: 20_000 });
    const { task, ws } = await createTask(s);
    const running = await taskWhen(task.id, (t) => t.status === 'running' && t.attempts >= 2, 'to be polled');

    const ended = await taskRepository.finish(ctx.db, task.id, { status: 'canceled' }, { workspaceId: ws.id });
    expect(ended).toMatchObject({ upstreamId: running.upstreamId });
    await enqueue(queues, TaskCancel, { taskId: task.id, workspaceId: ws.id });
    await cancelAccepted(s.channels[0]!);

    // The poll that was waiting runs and finds the task ended.
    const after = await taskRepository.find(ctx.db, task.id);
    const poll = await completedJob(jobIdFor(TaskPoll, [task.id, after!.attempts]));
    // not_running, or moved_on when that poll was already asking the provider as the task was canceled.
    expect(poll.returnvalue).toEqual({ outcome: 'stale', reason: expect.stringMatching(/^(not_running|moved_on)$/) });
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
      status: 'canceled',
      attempts: after!.attempts,
      output: null,
    });
    expect(await money(ws.id, task.reservationId!)).toEqual({ balance: BALANCE, charges: [], reservation: 'released' });
  });

  it('ignores a stale poll (another attempt number)', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { durationMs: 20_000 });
    const { task, ws } = await createTask(s);
    await taskWhen(task.id, (t) => t.status === 'running', 'to run');
    const job = await enqueue(queues, TaskPoll, { taskId: task.id, workspaceId: ws.id, attempt: 99 });
    expect((await completedJob(job.id!)).returnvalue).toEqual({ outcome: 'stale', reason: 'other_attempt' });
    const t = await taskRepository.find(ctx.db, task.id);
    expect(t!.attempts).toBeLessThan(99);
    expect(await jobOf('tasks', jobIdFor(TaskPoll, [task.id, 100]))).toBeUndefined();
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
  });

  it('fails over to the next channel when the first answers 500 on submit', async () => {
    const s = await setup(protocol, 'image', 2);
    sim.faults.add({ channel: s.channels[0], operation: 'create', status: 500 });
    const { task } = await createTask(s);
    const done = await settled(task.id);
    expect(done).toMatchObject({ channelId: s.channelIds[1], cost: PRICE });
    expect(createsTo(s.channels[0]!).map((r) => r.status)).toEqual([500]);
    expect(createsTo(s.channels[1]!).map((r) => r.status)).toEqual([protocol === 'replicate' ? 201 : 200]);
  });

  it('fails with invalid_input on a 422 at submit, without trying another channel', async () => {
    const s = await setup(protocol, 'image', 2);
    sim.faults.add({ channel: s.channels[0], operation: 'create', status: 422 });
    const { task, ws } = await createTask(s);
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'invalid_input', upstreamId: null });
    expect(createsTo(s.channels[0]!).map((r) => r.status)).toEqual([422]);
    expect(createsTo(s.channels[1]!)).toEqual([]);
    expect((await money(ws.id, task.reservationId!)).balance).toBe(BALANCE);
  });

  it('fails with invalid_input when the provider refuses the input itself', async () => {
    const s = await setup(protocol, 'image', 2);
    const { task } = await createTask(s, { input: { width: 4096 } });
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(done.errorMessage).toMatch(/width/);
    expect(createsTo(s.channels[1]!)).toEqual([]);
  });

  it('fails with invalid_input when the input file is gone', async () => {
    const s = await setup(protocol, 'image');
    const { task } = await createTask(s, { operation: 'image-to-image', input: { image: { file_id: 'file_gone' } } });
    expect(await settled(task.id)).toMatchObject({
      status: 'failed',
      errorCode: 'invalid_input',
      errorMessage: expect.stringContaining('file_gone'),
    });
    expect(requestsTo(s.channels[0]!)).toEqual([]);
  });

  it('fails with upstream_timeout, calling no provider, when the deadline passed before submission', async () => {
    const s = await setup(protocol, 'image');
    const { task } = await createTask(s, { deadlineMs: -1 });
    expect(await settled(task.id)).toMatchObject({ status: 'failed', errorCode: 'upstream_timeout' });
    expect(requestsTo(s.channels[0]!)).toEqual([]);
  });

  it('keeps polling through transient status errors', async () => {
    const s = await setup(protocol, 'image');
    sim.faults.add({ channel: s.channels[0], operation: 'status', status: 503, times: 2 });
    const { task } = await createTask(s);
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'running', cost: PRICE });
    expect(requestsTo(s.channels[0]!).filter((r) => r.status === 503)).toHaveLength(2);
  });

  it('fails with upstream_error when someone else cancels the job at the provider', async () => {
    const s = await setup(protocol, 'image');
    fault(s.channels[0]!, { durationMs: 20_000 });
    const { task, ws } = await createTask(s);
    const running = await submitted(task.id);
    const urls = running.upstreamUrls as Record<string, string>;
    const res =
      protocol === 'replicate'
        ? await fetch(urls.cancel!, { method: 'POST', headers: { authorization: 'Bearer someone-else' } })
        : await fetch(urls.cancel_url!, { method: 'PUT', headers: { authorization: 'Key someone-else' } });
    expect(res.ok).toBe(true);
    const done = await settled(task.id);
    expect(done).toMatchObject({
      status: 'failed',
      errorCode: 'upstream_error',
      errorMessage: 'The provider canceled the job.',
    });
    expect((await money(ws.id, task.reservationId!)).balance).toBe(BALANCE);
  });

  it('retries a submit no channel takes, and fails it with upstream_error on the last attempt', async () => {
    const s = await setup(protocol, 'image');
    sim.faults.add({ channel: s.channels[0], operation: 'create', status: 503 });
    const { task, ws } = await createTask(s, { noSubmit: true, callbackUrl: 'https://receiver.example/hook' });
    const submit = taskSubmit(runner.handlerDeps);
    const run = (attemptsMade: number) => submit({ taskId: task.id, workspaceId: ws.id }, direct(attemptsMade));

    await expect(run(0)).rejects.toMatchObject({ status: 502, code: 'upstream_error' });
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'queued' });
    expect(await run(4)).toEqual({ outcome: 'failed', code: 'upstream_error' });
    const done = await taskRepository.find(ctx.db, task.id);
    expect(done).toMatchObject({
      status: 'failed',
      errorCode: 'upstream_error',
      errorMessage: expect.stringContaining('503'),
    });
    expect(await money(ws.id, task.reservationId!)).toEqual({ balance: BALANCE, charges: [], reservation: 'released' });
    expect(await jobOf('callbacks', jobIdFor(CallbackDeliver, [task.id, 1]))).toBeDefined();
    expect(createsTo(s.channels[0]!).map((r) => r.status)).toEqual([503, 503]);
  });

  it('a task canceled during its submit: the submit records nothing and cancels the job it made', async () => {
    const s = await setup(protocol, 'image');
    const { task, ws } = await createTask(s, { noSubmit: true });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' }, { workspaceId: ws.id });

    // The submit read the task while it was still queued; the cancel landed after that read.
    const find = jest.spyOn(taskRepository, 'find').mockResolvedValueOnce(task);
    let outcome: Awaited<ReturnType<ReturnType<typeof taskSubmit>>> | undefined;
    try {
      outcome = await taskSubmit(slowPolls(runner.handlerDeps))({ taskId: task.id, workspaceId: ws.id }, direct(0));
    } finally {
      find.mockRestore();
    }
    expect(outcome).toEqual({ outcome: 'skipped', reason: 'canceled_meanwhile' });
    await cancelAccepted(s.channels[0]!);
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
      status: 'canceled',
      upstreamId: null,
      output: null,
    });
    expect(await money(ws.id, task.reservationId!)).toEqual({ balance: BALANCE, charges: [], reservation: 'released' });
    expect(await jobOf('tasks', jobIdFor(TaskPoll, [task.id, 1]))).toBeUndefined();
  });

  it('holds no worker slot while waiting: the first poll is a delayed job', async () => {
    const s = await setup(protocol, 'image');
    const { task, ws } = await createTask(s, { noSubmit: true });
    const outcome = await taskSubmit(slowPolls(runner.handlerDeps))({ taskId: task.id, workspaceId: ws.id }, direct(0));
    expect(outcome).toMatchObject({ outcome: 'submitted', channelId: s.channelIds[0] });
    const poll = await jobOf('tasks', jobIdFor(TaskPoll, [task.id, 1]));
    expect(await poll!.getState()).toBe('delayed');
    expect(poll!.opts.delay).toBeGreaterThan(25_000);
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
  });

  it('asks the provider for a webhook when they are on and makes no poll: the reconciler is the fallback', async () => {
    const s = await setup(protocol, 'image');
    const { task, ws } = await createTask(s, { noSubmit: true });
    // An address nothing answers at: the sim's webhook reaches nothing, and the task is left as the submit left it.
    const hooks = {
      ...runner.handlerDeps.config.providerWebhooks,
      baseUrl: 'http://127.0.0.1:9',
      replicateSecret: 'whsec_dGVzdA==',
      falUserId: 'sim-user',
    };
    const deps = { ...runner.handlerDeps, config: { ...runner.handlerDeps.config, providerWebhooks: hooks } };
    const outcome = await taskSubmit(deps)({ taskId: task.id, workspaceId: ws.id }, direct(0));
    expect(outcome).toMatchObject({ outcome: 'submitted', channelId: s.channelIds[0] });
    expect(await jobOf('tasks', jobIdFor(TaskPoll, [task.id, 1]))).toBeUndefined();
    const row = await taskRepository.find(ctx.db, task.id);
    expect(row).toMatchObject({ status: 'running', attempts: 1, output: null });
    // The provider was given the task's webhook URL, and called it when the job ended.
    const hook = await eventually(async () => sim.webhooks().find((w) => w.id === row!.upstreamId), 'the webhook sent');
    expect(hook).toMatchObject({
      provider: protocol,
      url: `http://127.0.0.1:9/v1/provider-webhooks/${protocol}/${task.id}`,
      status: null,
    });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
  });
});

describe('a re-run of a job that died half-way', () => {
  const rerun = direct(1);

  it('a poll that counted itself but added no next poll adds it when it runs again', async () => {
    const s = await setup('fal', 'image');
    const { task, ws } = await createTask(s, { noSubmit: true });
    // Submitted with a first poll far away, so only the re-run below can move the task.
    expect(
      await taskSubmit(slowPolls(runner.handlerDeps))({ taskId: task.id, workspaceId: ws.id }, rerun),
    ).toMatchObject({ outcome: 'submitted' });
    // Poll 1 counted itself (attempts 1 → 2) and died before adding poll 2.
    expect(await taskRepository.advancePoll(ctx.db, task.id, 1)).toBe(true);

    expect(await taskPoll(runner.handlerDeps)({ taskId: task.id, workspaceId: ws.id, attempt: 1 }, rerun)).toEqual({
      outcome: 'stale',
      reason: 'other_attempt',
    });
    const done = await settled(task.id);
    expect(done).toMatchObject({ status: 'running', cost: PRICE });
    expect(done.attempts).toBeGreaterThan(2);
  });

  it('a poll that recorded the output but added no archive job adds it when it runs again', async () => {
    const s = await setup('fal', 'image');
    const { task, ws } = await createTask(s);
    const done = await settled(task.id);
    const archive = await jobOf('archive', jobIdFor(ArchiveOutput, [task.id, 0]));
    await archive!.remove();

    expect(
      await taskPoll(runner.handlerDeps)({ taskId: task.id, workspaceId: ws.id, attempt: done.attempts }, rerun),
    ).toEqual({ outcome: 'stale', reason: 'moved_on' });
    expect((await jobOf('archive', jobIdFor(ArchiveOutput, [task.id, 0])))?.data).toMatchObject({
      taskId: task.id,
      outputIndex: 0,
    });
  });
});

describe('input images', () => {
  it('sends a workspace file to Replicate as a fresh signed link', async () => {
    const s = await setup('replicate', 'image');
    const { task, ws } = await createTask(s, { noSubmit: true, operation: 'image-to-image' });
    const fileId = newId('file');
    await fileRepository.create(ctx.db, {
      id: fileId,
      workspaceId: ws.id,
      source: 'upload',
      purpose: 'input',
      filename: 'ref.png',
      contentType: 'image/png',
      bytes: 10n,
      storageKey: `k/${fileId}`,
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    await ctx.db.task.update({
      where: { id: task.id },
      data: { input: { ...(task.input as object), image: { file_id: fileId } } },
    });
    await enqueue(queues, TaskSubmit, { taskId: task.id, workspaceId: ws.id });
    const running = await submitted(task.id);
    // The sim's prediction echoes the input it was given.
    const res = await fetch(`${sim.url}/ch/${s.channels[0]}/v1/predictions/${running.upstreamId}`, {
      headers: { authorization: 'Bearer x' },
    });
    const prediction = (await res.json()) as { input: Record<string, unknown> };
    const link = new URL(prediction.input.image as string);
    expect(`${link.origin}${link.pathname}`).toBe(`${ctx.config.publicBaseUrl}/api/v1/files/${fileId}/content`);
    // A content token of the server's secret for this file of this workspace (what GET .../content accepts).
    expect(await verifyFileToken(ctx.config.signingSecret, link.searchParams.get('token') ?? '')).toEqual({
      fileId,
      workspaceId: ws.id,
    });
    expect(prediction.input).toMatchObject({
      prompt: 'a lighthouse at dusk',
      width: 1024,
      height: 768,
      aspect_ratio: '4:3',
    });
  });
});
