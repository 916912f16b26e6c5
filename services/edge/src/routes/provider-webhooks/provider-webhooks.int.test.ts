// The provider-webhook route against real Postgres and Redis: a verified webhook that carries a task's result records
// it (output, one charge, archive jobs) before it answers, and no poll is ever made for that task; any other webhook of
// the task's job has the task polled now (a poll added with `ended`), after its 204, and the work it starts is closed
// by its owner. The edge's shutdown (closeRoutes, before the deps' queues and Redis close) waits for that work in
// flight, so a webhook answered just before a SIGTERM still has its task polled.
import { createHmac } from 'node:crypto';
import { createQueues, jobIdOf, taskJobRef, type Queues } from '@gensvc/queue';
import { ArchiveOutput, TaskPoll } from '@gensvc/contracts';
import { taskRepository, type TaskRow } from '@gensvc/db';
import { addSimChannel, eventually, makeTask, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const SECRET = `whsec_${Buffer.from('provider webhook route test secret').toString('base64')}`;
const ctx = useTestContext({
  PROVIDER_WEBHOOK_BASE_URL: 'https://hooks.gensvc.test',
  REPLICATE_WEBHOOK_SECRET: SECRET,
});

/** A Replicate webhook for prediction `id`, signed as Replicate signs (Standard Webhooks); `prediction`: its body. */
function replicateWebhook(id: string, prediction: Record<string, unknown> = { status: 'succeeded' }) {
  const body = JSON.stringify({ id, ...prediction });
  const webhookId = `msg_${id}_${Math.random().toString(36).slice(2)}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const mac = createHmac('sha256', Buffer.from(SECRET.slice('whsec_'.length), 'base64'))
    .update(`${webhookId}.${timestamp}.${body}`)
    .digest('base64');
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${mac}`,
    },
    body,
  };
}

it('shutdown waits for the look a webhook began: a task recorded meanwhile is polled before queues close', async () => {
  const edge = await startEdge(ctx);
  const channel = await addSimChannel(ctx.db, 'http://127.0.0.1:9', {
    name: 'webhook-shutdown-replicate',
    kind: 'replicate',
  });
  // A task whose submit is in flight: its webhook's look reads the row again for a few seconds.
  const task = await makeTask(ctx.db);
  const res = await fetch(
    `${edge.url}/v1/provider-webhooks/replicate/${task.id}`,
    replicateWebhook('pred-1', { status: 'failed', error: 'boom' }),
  );
  expect(res.status).toBe(204);
  // The submit records the provider's job only now, after the webhook was answered.
  const queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  try {
    expect(
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: channel.id,
        upstreamId: 'pred-1',
        upstreamUrls: null,
      }),
    ).toBe(true);
    await edge.close();
    // Closed means that look ended: the task's poll 1 was added, due now, saying its job ended.
    const poll = await queues.get(TaskPoll.queue).getJob(jobIdOf(TaskPoll, { ...taskJobRef(task), attempt: 1 }));
    expect(await poll!.getState()).toBe('waiting');
    expect(poll!.data).toMatchObject({ taskId: task.id, attempt: 1, ended: true });
  } finally {
    await queues.close();
  }
}, 30_000);

describe('a webhook that carries the result', () => {
  const BALANCE = 10_000_000n;
  const PRICE = 40_000n;
  const OUTPUT = 'https://cdn.provider.test/out/a.png';
  let edge: EdgeUnderTest;
  let queues: Queues;
  let channelId: string;
  beforeAll(async () => {
    edge = await startEdge(ctx);
    queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
    // The channel's address is never called: a recorded result needs no provider read.
    channelId = (
      await addSimChannel(ctx.db, 'http://127.0.0.1:9', { name: 'webhook-route-replicate', kind: 'replicate' })
    ).id;
  });
  afterAll(async () => {
    await edge.close();
    await queues.close();
  });

  /** A task whose prediction `upstreamId` runs at Replicate, submitted with a webhook: no poll waits for it. */
  async function runningTask(upstreamId: string, over: Parameters<typeof makeTask>[1] = {}): Promise<TaskRow> {
    const ws = await makeWorkspace(ctx.db, { balance: BALANCE });
    const task = await makeTask(ctx.db, { workspaceId: ws.id, amount: PRICE, ...over });
    expect(await taskRepository.markSubmitted(ctx.db, task.id, { channelId, upstreamId, upstreamUrls: null })).toBe(
      true,
    );
    return (await taskRepository.find(ctx.db, task.id))!;
  }
  /** The task's poll 1 became due now, added by the webhook's hint (it says its job ended). */
  const polledNow = (task: TaskRow) =>
    eventually(async () => {
      const poll = await pollOf(task);
      return (await poll?.getState()) === 'waiting' && poll!.data.ended === true;
    }, 'the poll added now');
  const post = (task: TaskRow, webhook: ReturnType<typeof replicateWebhook>) =>
    fetch(`${edge.url}/v1/provider-webhooks/replicate/${task.id}`, webhook);
  const pollOf = (task: TaskRow) =>
    queues.get(TaskPoll.queue).getJob(jobIdOf(TaskPoll, { ...taskJobRef(task), attempt: 1 }));
  const archiveOf = (task: TaskRow) =>
    queues.get(ArchiveOutput.queue).getJob(jobIdOf(ArchiveOutput, { ...taskJobRef(task), outputIndex: 0 }));
  const chargesOf = (task: TaskRow) =>
    ctx.db.ledgerEntry.findMany({ where: { workspaceId: task.workspaceId, kind: 'charge' } });
  const balanceOf = async (task: TaskRow) =>
    (await ctx.db.workspace.findUniqueOrThrow({ where: { id: task.workspaceId } })).balance;

  it('records it before answering: output pending archive, one charge, archive job, no poll; replay free', async () => {
    const task = await runningTask('pred-done');
    const done = { status: 'succeeded', output: [OUTPUT] };
    expect((await post(task, replicateWebhook('pred-done', done))).status).toBe(204);

    // Answered after the recording: all of it is there at the 204, with no poll run.
    const row = (await taskRepository.find(ctx.db, task.id))!;
    expect(row).toMatchObject({ status: 'running', cost: PRICE, attempts: 1 });
    expect(row.output).toEqual({
      outputs: [expect.objectContaining({ kind: 'image', url: OUTPUT, archive_status: 'pending' })],
    });
    expect(await chargesOf(task)).toEqual([expect.objectContaining({ amount: -PRICE, taskId: task.id })]);
    expect(await balanceOf(task)).toBe(BALANCE - PRICE);
    // The archive job carries ids only: the archiver reads the output and the workspace.
    const archive = (await archiveOf(task))?.data;
    expect(archive).toMatchObject({ taskId: task.id, outputIndex: 0 });
    expect(archive).not.toHaveProperty('source');
    expect(await pollOf(task)).toBeUndefined();

    // Replicate retries a webhook (a new webhook-id and timestamp, the same prediction): nothing moves.
    expect((await post(task, replicateWebhook('pred-done', done))).status).toBe(204);
    expect(await chargesOf(task)).toHaveLength(1);
    expect(await balanceOf(task)).toBe(BALANCE - PRICE);
    expect((await taskRepository.find(ctx.db, task.id))!.output).toEqual(row.output);
    expect(await pollOf(task)).toBeUndefined();
  });

  it('records webhooks arriving together in groups: each task charged once, its archive added, no poll', async () => {
    const tasks = await Promise.all(Array.from({ length: 24 }, (_, i) => runningTask(`pred-group-${i}`)));
    const recordMany = jest.spyOn(taskRepository, 'recordWebhookOutputs');
    const answers = await Promise.all(
      tasks.map((task, i) =>
        post(task, replicateWebhook(`pred-group-${i}`, { status: 'succeeded', output: [OUTPUT] })),
      ),
    );
    const groups = recordMany.mock.calls.map(([, inputs]) => inputs.length);
    recordMany.mockRestore();
    expect(answers.map((a) => a.status)).toEqual(tasks.map(() => 204));
    // Every result went through a grouped statement, fewer statements than webhooks.
    expect(groups.reduce((a, b) => a + b, 0)).toBe(24);
    expect(groups.length).toBeLessThan(24);
    for (const task of tasks) {
      expect(await chargesOf(task)).toEqual([expect.objectContaining({ amount: -PRICE, taskId: task.id })]);
      expect(await archiveOf(task)).toBeDefined();
      expect(await pollOf(task)).toBeUndefined();
    }
  });

  it("records a video with its task's asked duration when the provider says none (read from the row)", async () => {
    const task = await runningTask('pred-video', {
      operation: 'text-to-video',
      input: { prompt: 'waves', width: 64, height: 64, duration_seconds: 4 },
    });
    const done = { status: 'succeeded', output: 'https://cdn.provider.test/out/a.mp4' };
    expect((await post(task, replicateWebhook('pred-video', done))).status).toBe(204);
    const row = (await taskRepository.find(ctx.db, task.id))!;
    expect(row).toMatchObject({ status: 'running', cost: PRICE });
    expect(row.output).toEqual({
      outputs: [expect.objectContaining({ kind: 'video', url: done.output, duration: 4, archive_status: 'pending' })],
    });
    expect(await chargesOf(task)).toHaveLength(1);
    expect((await archiveOf(task))?.data).toMatchObject({ taskId: task.id, outputIndex: 0 });
    expect(await pollOf(task)).toBeUndefined();
    // A replay: the row says done, nothing moves.
    expect((await post(task, replicateWebhook('pred-video', done))).status).toBe(204);
    expect(await chargesOf(task)).toHaveLength(1);
  });

  it("records nothing from a webhook whose provider is not the task's channel's; the task is polled now", async () => {
    const ws = await makeWorkspace(ctx.db, { balance: BALANCE });
    const task = await makeTask(ctx.db, { workspaceId: ws.id, amount: PRICE });
    const fal = await addSimChannel(ctx.db, 'http://127.0.0.1:9', { name: 'webhook-route-fal', kind: 'fal' });
    expect(
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: fal.id,
        upstreamId: 'pred-at-fal',
        upstreamUrls: null,
      }),
    ).toBe(true);
    // Replicate's signature over a body naming the fal job's id: read by Replicate's parser, so not this task's result.
    expect((await post(task, replicateWebhook('pred-at-fal', { status: 'succeeded', output: [OUTPUT] }))).status).toBe(
      204,
    );
    await polledNow(task);
    expect((await taskRepository.find(ctx.db, task.id))!).toMatchObject({ output: null, cost: null });
    expect(await chargesOf(task)).toEqual([]);
  });

  it("records and polls nothing for a webhook signed for another job (the URL's task id is not signed)", async () => {
    const task = await runningTask('pred-mine');
    // Replicate's own signature, over another prediction of the account, sent to this task's URL, at an edge of its
    // own: its close waits for whatever the webhook started.
    const own = await startEdge(ctx);
    const res = await fetch(
      `${own.url}/v1/provider-webhooks/replicate/${task.id}`,
      replicateWebhook('pred-someone-elses', { status: 'succeeded', output: [OUTPUT] }),
    );
    expect(res.status).toBe(204);
    await own.close();
    expect(await pollOf(task)).toBeUndefined();
    const row = (await taskRepository.find(ctx.db, task.id))!;
    expect(row.output).toBeNull();
    expect(row.cost).toBeNull();
    expect(await chargesOf(task)).toEqual([]);
    expect(await archiveOf(task)).toBeUndefined();
  });

  it.each([
    ['failed', { status: 'failed', error: 'CUDA out of memory' }],
    ['canceled', { status: 'canceled' }],
    ['succeeded without a file', { status: 'succeeded', output: null }],
    ['of an unknown status', { status: 'exploded', output: [OUTPUT] }],
  ])('leaves a prediction %s to the poll: nothing recorded, the task polled now', async (_what, prediction) => {
    const task = await runningTask('pred-other-end');
    expect((await post(task, replicateWebhook('pred-other-end', prediction))).status).toBe(204);
    await polledNow(task);
    const row = (await taskRepository.find(ctx.db, task.id))!;
    expect(row).toMatchObject({ status: 'running', output: null, errorCode: null });
    expect(await chargesOf(task)).toEqual([]);
  });

  it('records nothing for a task still submitting (its prediction id not recorded yet)', async () => {
    const task = await makeTask(ctx.db);
    expect((await post(task, replicateWebhook('pred-early', { status: 'succeeded', output: [OUTPUT] }))).status).toBe(
      204,
    );
    const row = (await taskRepository.find(ctx.db, task.id))!;
    expect(row).toMatchObject({ status: 'queued', output: null, upstreamId: null });
    expect(await chargesOf(task)).toEqual([]);
  });
});
