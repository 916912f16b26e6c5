// The task state machine and its money against real Postgres: every transition is one conditional update, so of
// racing writers exactly one wins, and the hold is settled or released exactly once.
import { addSimChannel, makeKey, makeTask, makeWorkspace, useTestContext } from '@gensvc/testing';
import { isAppError } from '@gensvc/errors';
import { newId } from '../ids';
import { billingRepository } from './billing.repository';
import { callbackRepository } from './callback.repository';
import { readAttemptContext } from '../testing';
import { taskRepository, type DeliveryUpdate, type TaskRow, type WebhookOutputInput } from './task.repository';

const ctx = useTestContext();
const PRICE = 40_000n;

async function books(workspaceId: string, keyId: string) {
  const ws = await ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const key = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: keyId } });
  const held = await ctx.db.reservation.aggregate({ where: { workspaceId, state: 'held' }, _sum: { amount: true } });
  return {
    balance: ws.balance,
    spent: key.spent,
    reserved: key.reserved,
    held: held._sum.amount ?? 0n,
    ledger: await billingRepository.ledgerTotal(ctx.db, workspaceId),
  };
}

async function customer(balance = 1_000_000n) {
  const ws = await makeWorkspace(ctx.db, { balance });
  const { key } = await makeKey(ctx.db, ws.id);
  return { workspaceId: ws.id, apiKeyId: key.id };
}

const output = (status: 'pending' | 'archived' | 'failed' | 'too_large') => ({
  outputs: [{ kind: 'image' as const, url: 'https://provider.example/a.png', archive_status: status }],
});

it('creates the row and its hold together; a hold that cannot be made leaves no row', async () => {
  const c = await customer(PRICE);
  const task = await makeTask(ctx.db, { ...c, amount: PRICE });
  expect(task).toMatchObject({ status: 'queued', reserved: PRICE });
  // The row answered is composed from the statement's parameters and the defaulted columns: it is the stored row.
  expect(task).toEqual(await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } }));
  expect(task).toEqual(await taskRepository.find(ctx.db, task.id));
  expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ balance: 0n, held: PRICE, reserved: PRICE });
  await expect(makeTask(ctx.db, { ...c, amount: 1n })).rejects.toMatchObject({
    status: 402,
    code: 'insufficient_balance',
  });
  expect(await ctx.db.task.count({ where: { workspaceId: c.workspaceId } })).toBe(1);
});

it('creation is one statement: an unwritable row leaves no hold, and racing creations hold exactly', async () => {
  const c = await customer(3n * PRICE);
  const task = await makeTask(ctx.db, { ...c, amount: PRICE });
  // The same id again: the INSERT fails, and the hold made in the same statement is undone with it.
  await expect(makeTask(ctx.db, { ...c, id: task.id, amount: PRICE })).rejects.toBeDefined();
  expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ balance: 2n * PRICE, held: PRICE, reserved: PRICE });
  // Eight at once against the two prices left: exactly two are created, the rest are 402 and leave nothing.
  const racing = await Promise.allSettled(Array.from({ length: 8 }, () => makeTask(ctx.db, { ...c, amount: PRICE })));
  expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
  for (const r of racing)
    if (r.status === 'rejected') expect(r.reason).toMatchObject({ status: 402, code: 'insufficient_balance' });
  expect(await ctx.db.task.count({ where: { workspaceId: c.workspaceId } })).toBe(3);
  expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ balance: 0n, held: 3n * PRICE, reserved: 3n * PRICE });
});

describe("createMany (the edge groups one key's creations)", () => {
  const input = (c: { workspaceId: string; apiKeyId: string }, over: { id?: string; amount?: bigint } = {}) => ({
    id: newId('tsk'),
    ...c,
    requestId: `req_${newId('tsk')}`,
    model: 'sim/image-1',
    operation: 'text-to-image',
    input: { prompt: 'a lighthouse', width: 64, height: 64 },
    callbackUrl: 'https://receiver.example/cb',
    amount: PRICE,
    deadlineAt: new Date(Date.now() + 10 * 60_000),
    ...over,
  });

  it('holds items in order, as successive creations: those the balance covers are written, others 402', async () => {
    const c = await customer(3n * PRICE);
    // The second is too dear for what is left after the first; the third and fourth fit after it, the fifth does not.
    const inputs = [input(c), input(c, { amount: 3n * PRICE }), input(c), input(c), input(c)];
    const answers = await taskRepository.createMany(ctx.db, inputs);
    expect(answers.map((a) => (isAppError(a) ? a.code : a.status))).toEqual([
      'queued',
      'insufficient_balance',
      'queued',
      'queued',
      'insufficient_balance',
    ]);
    for (const [i, a] of answers.entries()) {
      if (isAppError(a)) continue;
      // Composed from the item and the defaulted columns: it is the stored row.
      expect(a).toEqual(await ctx.db.task.findUniqueOrThrow({ where: { id: inputs[i]!.id } }));
      expect(a).toMatchObject({
        callbackUrl: 'https://receiver.example/cb',
        reserved: PRICE,
        requestId: inputs[i]!.requestId,
      });
    }
    expect(await ctx.db.task.count({ where: { workspaceId: c.workspaceId } })).toBe(3);
    expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({
      balance: 0n,
      held: 3n * PRICE,
      reserved: 3n * PRICE,
    });
  });

  it('is one transaction: an item that cannot be written leaves no task and no hold of any item', async () => {
    const c = await customer(10n * PRICE);
    const existing = await makeTask(ctx.db, { ...c, amount: PRICE });
    await expect(
      taskRepository.createMany(ctx.db, [input(c), input(c, { id: existing.id }), input(c)]),
    ).rejects.toBeDefined();
    expect(await ctx.db.task.count({ where: { workspaceId: c.workspaceId } })).toBe(1);
    expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ balance: 9n * PRICE, held: PRICE, reserved: PRICE });
  });
});

it('a result racing a cancel (by request, or at the deadline): one wins, and the money follows it', async () => {
  const deadline = { code: 'deadline_exceeded', message: 'The task did not finish within its deadline of 5 s.' };
  for (let round = 0; round < 10; round++) {
    // Even rounds a cancel by request, odd ones the deadline's.
    const reason = round % 2 === 1 ? deadline : undefined;
    const c = await customer();
    const task = await makeTask(ctx.db, { ...c, amount: PRICE });
    expect(
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: 'ch_x',
        upstreamId: 'up_1',
        upstreamUrls: null,
      }),
    ).toBe(true);
    const [recorded, canceled] = await Promise.all([
      taskRepository.recordOutput(ctx.db, task.id, output('pending'), PRICE),
      taskRepository.finish(ctx.db, task.id, { status: 'canceled', reason }),
    ]);
    expect([recorded, canceled].filter((r) => r !== null)).toHaveLength(1);
    const after = await books(c.workspaceId, c.apiKeyId);
    expect(after.held).toBe(0n);
    expect(after.ledger).toBe(after.balance);
    if (recorded) {
      expect(recorded.charged).toBe(PRICE);
      expect(after).toMatchObject({ balance: 1_000_000n - PRICE, spent: PRICE, reserved: 0n });
    } else {
      expect(after).toMatchObject({ balance: 1_000_000n, spent: 0n, reserved: 0n });
      expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
        status: 'canceled',
        errorCode: reason?.code ?? null,
        errorMessage: reason?.message ?? null,
      });
      // Canceled first: a result arriving after is not recorded, so never charged.
      expect(await taskRepository.recordOutput(ctx.db, task.id, output('pending'), PRICE)).toBeNull();
      expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ balance: 1_000_000n, spent: 0n });
    }
  }
});

it('records a submit on its own row only while the task is queued; a task that moved on is left as it is', async () => {
  const [a, b, canceled] = [await makeTask(ctx.db), await makeTask(ctx.db), await makeTask(ctx.db)];
  await taskRepository.finish(ctx.db, canceled.id, { status: 'canceled' });
  const urls = { get: 'https://provider.example/p/1' };
  expect(
    await taskRepository.markSubmitted(ctx.db, b.id, { channelId: 'ch_b', upstreamId: 'up_b', upstreamUrls: null }),
  ).toBe(true);
  expect(
    await taskRepository.markSubmitted(ctx.db, canceled.id, {
      channelId: 'ch_c',
      upstreamId: 'up_c',
      upstreamUrls: null,
    }),
  ).toBe(false);
  expect(
    await taskRepository.markSubmitted(ctx.db, a.id, { channelId: 'ch_a', upstreamId: 'up_a', upstreamUrls: urls }),
  ).toBe(true);
  expect(await taskRepository.find(ctx.db, a.id)).toMatchObject({
    status: 'running',
    channelId: 'ch_a',
    upstreamId: 'up_a',
    upstreamUrls: urls,
    attempts: 1,
  });
  expect(await taskRepository.find(ctx.db, b.id)).toMatchObject({
    status: 'running',
    channelId: 'ch_b',
    upstreamId: 'up_b',
    upstreamUrls: null,
    attempts: 1,
  });
  expect(await taskRepository.find(ctx.db, canceled.id)).toMatchObject({
    status: 'canceled',
    channelId: null,
    upstreamId: null,
    attempts: 0,
  });
  // A second record of a submitted task changes nothing.
  expect(
    await taskRepository.markSubmitted(ctx.db, a.id, { channelId: 'ch_x', upstreamId: 'up_x', upstreamUrls: null }),
  ).toBe(false);
  expect(await taskRepository.find(ctx.db, a.id)).toMatchObject({ upstreamId: 'up_a' });
});

it('racing submits of the same tasks: each task recorded exactly once', async () => {
  for (let round = 0; round < 5; round++) {
    const tasks = await Promise.all(Array.from({ length: 8 }, () => makeTask(ctx.db)));
    const submit = (t: TaskRow, n: number) =>
      taskRepository.markSubmitted(ctx.db, t.id, {
        channelId: 'ch',
        upstreamId: `up_${n}_${t.id}`,
        upstreamUrls: null,
      });
    const answers = await Promise.all([0, 1, 2, 3].map((n) => Promise.all(tasks.map((t) => submit(t, n)))));
    for (let i = 0; i < tasks.length; i++) expect(answers.filter((a) => a[i]).length).toBe(1);
  }
});

it('counts polls from the expected count only, records an output once, completes with nothing pending', async () => {
  const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
  expect(await taskRepository.advancePoll(ctx.db, task.id, 1)).toBe(false); // still queued
  await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'up_2', upstreamUrls: null });
  expect(
    await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_y', upstreamId: 'up_3', upstreamUrls: null }),
  ).toBe(false);
  const racing = await Promise.all([1, 1, 1].map((n) => taskRepository.advancePoll(ctx.db, task.id, n)));
  expect(racing.filter(Boolean)).toHaveLength(1);
  expect((await taskRepository.find(ctx.db, task.id))?.attempts).toBe(2);

  expect(await taskRepository.recordOutput(ctx.db, task.id, output('pending'), task.reserved)).toEqual({
    charged: task.reserved,
  });
  expect(await taskRepository.recordOutput(ctx.db, task.id, output('pending'), task.reserved)).toBeNull();
  expect(await ctx.db.ledgerEntry.count({ where: { taskId: task.id } })).toBe(1);
  // Output recorded: neither a poll nor a failure moves it any more.
  expect(await taskRepository.advancePoll(ctx.db, task.id, 2)).toBe(false);
  expect(
    await taskRepository.finish(ctx.db, task.id, {
      status: 'failed',
      failure: { code: 'upstream_error', message: 'x' },
    }),
  ).toBeNull();

  expect(await taskRepository.completeIfArchived(ctx.db, task.id)).toBeNull(); // its output is still pending
  await ctx.db.task.update({ where: { id: task.id }, data: { output: output('too_large') } });
  const done = await Promise.all([
    taskRepository.completeIfArchived(ctx.db, task.id),
    taskRepository.completeIfArchived(ctx.db, task.id),
  ]);
  expect(done.filter((d) => d !== null)).toEqual([
    { id: task.id, workspaceId: task.workspaceId, callbackRoundStart: 1, callback: true },
  ]);
  expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'completed', callbackState: 'pending' });
});

describe('recordWebhookOutputs', () => {
  /** One webhook's result, alone in its statement. */
  const recordOne = async (input: WebhookOutputInput) =>
    (await taskRepository.recordWebhookOutputs(ctx.db, [input]))[0]!;
  const entry = (kind: 'image' | 'video') => ({
    outputs: [
      {
        kind,
        url: `https://provider.example/a.${kind === 'image' ? 'png' : 'mp4'}`,
        archive_status: 'pending' as const,
      },
    ],
  });
  let replicate: string;
  beforeAll(async () => {
    replicate = (
      await addSimChannel(ctx.db, 'http://127.0.0.1:9', { name: 'webhook-output-replicate', kind: 'replicate' })
    ).id;
  });

  it("checks and records a result in one statement: only this job's running task at this provider, once", async () => {
    const c = await customer();
    const task = await makeTask(ctx.db, { ...c, amount: PRICE });
    const record = (over: Partial<WebhookOutputInput> = {}) =>
      recordOne({
        id: task.id,
        upstreamId: 'pred-1',
        provider: 'replicate',
        outputs: { image: entry('image') },
        ...over,
      });

    expect(await record()).toEqual({ outcome: 'not_this' }); // still submitting: no job id to match
    expect(await record({ id: 'tsk_gone' })).toEqual({ outcome: 'not_this' });
    expect(
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: replicate,
        upstreamId: 'pred-1',
        upstreamUrls: null,
      }),
    ).toBe(true);
    expect(await record({ upstreamId: 'pred-someone-elses' })).toEqual({ outcome: 'not_this' });
    expect(await record({ provider: 'fal' })).toEqual({ outcome: 'not_this' });
    // No entries of the task's kind: nothing written, for the caller to record from the row.
    expect(await record({ outputs: { video: entry('video') } })).toEqual({ outcome: 'needs_row' });
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'running', output: null, cost: null });
    expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({ held: PRICE, spent: 0n });

    const racing = await Promise.all([record(), record(), record()]);
    expect(racing.filter((r) => r.outcome === 'recorded')).toEqual([
      {
        outcome: 'recorded',
        kind: 'image',
        charged: PRICE,
        task: { id: task.id, workspaceId: c.workspaceId, model: task.model },
      },
    ]);
    // The others saw it recorded (done), or passed the check beside the winner and lost at the write (moved_on).
    for (const r of racing.filter((r) => r.outcome !== 'recorded')) expect(['done', 'moved_on']).toContain(r.outcome);
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
      status: 'running',
      output: entry('image'),
      cost: PRICE,
    });
    expect(await record()).toEqual({ outcome: 'done' });
    expect(await ctx.db.ledgerEntry.count({ where: { taskId: task.id } })).toBe(1);
    expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({
      balance: 1_000_000n - PRICE,
      held: 0n,
      spent: PRICE,
    });

    // Ended without it (failed, canceled): done, and nothing charged.
    const failed = await makeTask(ctx.db, { ...c, amount: PRICE });
    await taskRepository.markSubmitted(ctx.db, failed.id, {
      channelId: replicate,
      upstreamId: 'pred-2',
      upstreamUrls: null,
    });
    await taskRepository.finish(ctx.db, failed.id, { status: 'canceled' });
    expect(await record({ id: failed.id, upstreamId: 'pred-2' })).toEqual({ outcome: 'done' });
    expect(await taskRepository.find(ctx.db, failed.id)).toMatchObject({
      status: 'canceled',
      output: null,
      cost: null,
    });
  });

  it('records a group in order, each item as alone, across keys and workspaces: each task charged once', async () => {
    const a = await customer();
    const b = { workspaceId: a.workspaceId, apiKeyId: (await makeKey(ctx.db, a.workspaceId)).key.id };
    const other = await customer();
    const running = async (c: { workspaceId: string; apiKeyId: string }, upstreamId: string) => {
      const task = await makeTask(ctx.db, { ...c, amount: PRICE });
      await taskRepository.markSubmitted(ctx.db, task.id, { channelId: replicate, upstreamId, upstreamUrls: null });
      return task;
    };
    const [t1, t2, t3] = [await running(a, 'g-1'), await running(b, 'g-2'), await running(other, 'g-3')];
    const item = (task: { id: string }, upstreamId: string) => ({
      id: task.id,
      upstreamId,
      provider: 'replicate',
      outputs: { image: entry('image') },
    });
    const answers = await taskRepository.recordWebhookOutputs(ctx.db, [
      item(t3, 'g-3'),
      item(t1, 'g-1'),
      item(t2, 'not-its-job'),
      item(t1, 'g-1'),
      item(t2, 'g-2'),
    ]);
    expect(answers.map((x) => x.outcome)).toEqual(['recorded', 'recorded', 'not_this', 'done', 'recorded']);
    expect(answers[1]).toEqual({
      outcome: 'recorded',
      kind: 'image',
      charged: PRICE,
      task: { id: t1.id, workspaceId: a.workspaceId, model: t1.model },
    });
    for (const t of [t1, t2, t3]) expect(await ctx.db.ledgerEntry.count({ where: { taskId: t.id } })).toBe(1);
    expect(await books(a.workspaceId, a.apiKeyId)).toMatchObject({
      balance: 1_000_000n - 2n * PRICE,
      held: 0n,
      spent: PRICE,
    });
    expect(await books(a.workspaceId, b.apiKeyId)).toMatchObject({ spent: PRICE });
    expect(await books(other.workspaceId, other.apiKeyId)).toMatchObject({
      balance: 1_000_000n - PRICE,
      held: 0n,
      spent: PRICE,
    });
  });

  it('groups beside creations, lone results and cancels of its keys: no lock cycle, each settled once', async () => {
    // Two keys of one workspace and a key of another; groups name their tasks in opposite orders. A lock cycle would
    // fail a statement with a deadlock after deadlock_timeout (1 s); here every statement must succeed.
    const a = await customer(100n * PRICE);
    const b = { workspaceId: a.workspaceId, apiKeyId: (await makeKey(ctx.db, a.workspaceId)).key.id };
    const other = await customer(100n * PRICE);
    const owners = [a, b, other];
    const tasks: { task: TaskRow; upstreamId: string }[] = [];
    for (let i = 0; i < 24; i++) {
      const task = await makeTask(ctx.db, { ...owners[i % 3]!, amount: PRICE });
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: replicate,
        upstreamId: `r-${i}`,
        upstreamUrls: null,
      });
      tasks.push({ task, upstreamId: `r-${i}` });
    }
    const item = ({ task, upstreamId }: (typeof tasks)[number]) => ({
      id: task.id,
      upstreamId,
      provider: 'replicate',
      outputs: { image: entry('image') },
    });
    const forward = tasks.map(item);
    const backward = [...forward].reverse();
    const creation = (c: { workspaceId: string; apiKeyId: string }) => ({
      id: newId('tsk'),
      ...c,
      requestId: 'req_race',
      model: 'sim/image-1',
      operation: 'text-to-image',
      input: { prompt: 'a lighthouse', width: 64, height: 64 },
      callbackUrl: null,
      amount: PRICE,
      deadlineAt: new Date(Date.now() + 60_000),
    });
    const results = await Promise.all([
      taskRepository.recordWebhookOutputs(ctx.db, forward.slice(0, 16)),
      taskRepository.recordWebhookOutputs(ctx.db, backward.slice(0, 16)),
      taskRepository.recordWebhookOutputs(
        ctx.db,
        forward.filter((_, i) => i % 2 === 1),
      ),
      ...tasks.slice(0, 6).map(({ task }) => taskRepository.recordOutput(ctx.db, task.id, entry('image'), PRICE)),
      taskRepository.finish(ctx.db, tasks[23]!.task.id, { status: 'canceled' }),
      taskRepository.createMany(ctx.db, [creation(b), creation(b), creation(b)]),
      taskRepository.createMany(ctx.db, [creation(a), creation(a)]),
      taskRepository.createMany(ctx.db, [creation(other)]),
    ]);
    expect(results).toHaveLength(13);
    for (const { task } of tasks.slice(0, 23)) {
      expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'running', cost: PRICE });
      expect(await ctx.db.ledgerEntry.count({ where: { taskId: task.id } })).toBe(1);
    }
    // The cancel raced two groups' results for the last task: whichever came first decided, and the money followed it.
    const last = (await taskRepository.find(ctx.db, tasks[23]!.task.id))!;
    const lastCharges = await ctx.db.ledgerEntry.count({ where: { taskId: last.id } });
    expect([last.status, last.cost, lastCharges]).toEqual(
      last.status === 'canceled' ? ['canceled', null, 0] : ['running', PRICE, 1],
    );
    for (const c of owners) {
      const { balance, held, ledger } = await books(c.workspaceId, c.apiKeyId);
      expect(balance + held).toBe(ledger);
    }
  });

  it("keeps the entries of the task's own kind", async () => {
    const task = await makeTask(ctx.db, {
      operation: 'text-to-video',
      input: { prompt: 'waves', width: 64, height: 64, duration_seconds: 4 },
    });
    await taskRepository.markSubmitted(ctx.db, task.id, {
      channelId: replicate,
      upstreamId: 'pred-video',
      upstreamUrls: null,
    });
    const outputs = { image: entry('image'), video: entry('video') };
    expect(await recordOne({ id: task.id, upstreamId: 'pred-video', provider: 'replicate', outputs })).toMatchObject({
      outcome: 'recorded',
      kind: 'video',
    });
    expect((await taskRepository.find(ctx.db, task.id))!.output).toEqual(entry('video'));
  });
});

it('fails a live task once, releasing its hold; another workspace cannot cancel it', async () => {
  const c = await customer();
  const task = await makeTask(ctx.db, { ...c, amount: PRICE });
  const other = await customer();
  expect(
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' }, { workspaceId: other.workspaceId }),
  ).toBeNull();
  const failure = { code: 'upstream_timeout', message: 'no result' };
  const both = await Promise.all([
    taskRepository.finish(ctx.db, task.id, { status: 'failed', failure }),
    taskRepository.finish(ctx.db, task.id, { status: 'failed', failure }),
  ]);
  expect(both.filter((r) => r !== null)).toHaveLength(1);
  expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
    status: 'failed',
    errorCode: 'upstream_timeout',
    callbackState: 'none',
  });
  expect(await books(c.workspaceId, c.apiKeyId)).toMatchObject({
    balance: 1_000_000n,
    held: 0n,
    reserved: 0n,
    spent: 0n,
  });
});

describe('callbacks', () => {
  let n = 0;
  const make = () => `whsec_test_${++n}`;

  it('one secret per workspace however many first reads race; a rotation keeps the old one for 24 h only', async () => {
    const { workspaceId } = await customer();
    const first = await Promise.all(
      Array.from({ length: 8 }, () => callbackRepository.secret(ctx.db, ctx.secrets, workspaceId, make)),
    );
    expect(new Set(first.map((s) => s.secret)).size).toBe(1);
    const now = new Date();
    const rotated = await callbackRepository.rotate(ctx.db, ctx.secrets, workspaceId, make, now);
    expect(rotated.previousSecret).toBe(first[0]!.secret);
    expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, workspaceId, make, now)).toEqual([
      rotated.secret,
      first[0]!.secret,
    ]);
    const dayLater = new Date(now.getTime() + 24 * 3600_000 + 1);
    expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, workspaceId, make, dayLater)).toEqual([
      rotated.secret,
    ]);
  });

  it('records an attempt once; a redelivery starts a new round, which the old round cannot mark', async () => {
    const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toBeNull(); // not finished yet
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
    const attempt = (k: number, statusCode: number) => ({
      workspaceId: task.workspaceId,
      taskId: task.id,
      attempt: k,
      deliveryId: `dlv_${task.id}_${k}`,
      url: 'https://hooks.example/cb',
      statusCode,
      durationMs: 3,
      error: null,
      responseHead: null,
      at: new Date(),
    });
    // As the dispatcher records an attempt, with no decision to apply (step null).
    const record = async (k: number) =>
      (
        await taskRepository.recordDeliveryAttempt(ctx.db, {
          input: attempt(k, 500),
          decidedOn: { callbackRoundStart: 1 },
          step: null,
        })
      ).recorded;
    expect(await record(1)).toBe(true);
    expect(await record(1)).toBe(false);
    expect(await record(2)).toBe(true);
    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toEqual({ attempt: 3 });
    // Attempt 2 belongs to the round before: it can neither deliver nor park the new one (a decision alone, about
    // an attempt recorded before, taken on the task as it is now).
    const apply = async (step: DeliveryUpdate) =>
      (
        await taskRepository.recordDeliveryAttempt(ctx.db, {
          taskId: task.id,
          decidedOn: { callbackRoundStart: 3 },
          step,
        })
      ).applied;
    expect(await apply({ attempt: 2, to: 'delivered', at: new Date() })).toBe(false);
    expect(await apply({ attempt: 2, to: 'parked' })).toBe(false);
    expect(await apply({ attempt: 3, to: 'delivered', at: new Date() })).toBe(true);
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
      callbackState: 'delivered',
      callbackRoundStart: 3,
    });
  });

  it('records an attempt and its decision in one statement, only while the task is as the attempt saw it', async () => {
    const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
    await taskRepository.finish(ctx.db, task.id, { status: 'canceled' });
    const attempt = (k: number, statusCode: number, at = new Date()) => ({
      workspaceId: task.workspaceId,
      taskId: task.id,
      attempt: k,
      deliveryId: `dlv_${task.id}_${k}`,
      url: 'https://hooks.example/cb',
      statusCode,
      durationMs: 3,
      error: null,
      responseHead: null,
      at,
    });
    const read = (await readAttemptContext(ctx.db, ctx.secrets, task.id))!;
    expect(read).toMatchObject({
      task: { id: task.id, callbackState: 'pending', callbackRoundStart: 1 },
      last: null,
      currency: 'USD',
      signing: null,
      archivedFile: null,
    });
    // Attempt 1 failed: the retry step is applied (the task moved); its re-run records and applies nothing.
    const failed = await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: attempt(1, 500),
      decidedOn: read.task,
      step: { attempt: 1, to: 'pending' },
    });
    expect(failed).toEqual({
      recorded: true,
      applied: true,
      task: { id: task.id, workspaceId: task.workspaceId, callbackState: 'pending', callbackRoundStart: 1 },
    });
    const again = await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: attempt(1, 200),
      decidedOn: read.task,
      step: { attempt: 1, to: 'delivered', at: new Date() },
    });
    expect(again).toMatchObject({ recorded: false, applied: false });
    const secret = await callbackRepository.secret(ctx.db, ctx.secrets, task.workspaceId, make);
    expect(await readAttemptContext(ctx.db, ctx.secrets, task.id)).toMatchObject({
      last: { attempt: 1, statusCode: 500, durationMs: 3 },
      signing: [secret.secret],
    });
    // A redelivery starts a new round while attempt 2 is in flight: decided on round 1, it is recorded but not applied.
    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toMatchObject({ attempt: 2 });
    const raced = await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: attempt(2, 500),
      decidedOn: read.task,
      step: { attempt: 2, to: 'parked' },
    });
    expect(raced).toMatchObject({
      recorded: true,
      applied: false,
      task: { callbackState: 'pending', callbackRoundStart: 2 },
    });
    // Decided on the task as it is now, it applies.
    const delivered = await taskRepository.recordDeliveryAttempt(ctx.db, {
      input: attempt(3, 200),
      decidedOn: raced.task!,
      step: { attempt: 3, to: 'delivered', at: new Date() },
    });
    expect(delivered).toMatchObject({ recorded: true, applied: true });
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({
      callbackState: 'delivered',
      callbackRoundStart: 2,
    });
    expect(await readAttemptContext(ctx.db, ctx.secrets, 'tsk_none')).toBeNull();
  });
});

describe('recordArchive', () => {
  const twoOutputs = {
    outputs: [0, 1].map((i) => ({
      kind: 'image' as const,
      url: `https://provider.example/${i}.png`,
      archive_status: 'pending' as const,
    })),
  };
  const fileOf = (task: { id: string; workspaceId: string }, outputIndex: number) => ({
    id: `file_${task.id}_${outputIndex}`,
    workspaceId: task.workspaceId,
    source: 'generated' as const,
    purpose: 'output',
    filename: `${task.id}-${outputIndex}.png`,
    contentType: 'image/png',
    bytes: 10n,
    sha256: 'ab',
    storageKey: `outputs/${task.workspaceId}/${task.id}-${outputIndex}`,
    expiresAt: new Date(Date.now() + 86_400_000),
    taskId: task.id,
    outputIndex,
  });

  it('parallel archives of a task’s outputs: each entry kept, one library row each, one completes it', async () => {
    for (let round = 0; round < 5; round++) {
      const task = await makeTask(ctx.db, { callbackUrl: 'https://hooks.example/cb' });
      await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'up', upstreamUrls: null });
      await taskRepository.recordOutput(ctx.db, task.id, twoOutputs, task.reserved);
      const archived = (i: number) => ({
        archive_status: 'archived' as const,
        svc_file_id: `file_${task.id}_${i}`,
        svc_url: `https://files.example/${i}`,
      });
      const results = await Promise.all([
        taskRepository.recordArchive(ctx.db, {
          taskId: task.id,
          outputIndex: 0,
          patch: archived(0),
          file: fileOf(task, 0),
        }),
        taskRepository.recordArchive(ctx.db, {
          taskId: task.id,
          outputIndex: 1,
          patch: { archive_status: 'too_large' },
        }),
        // A re-run of the first: its row stands, nothing is completed twice.
        taskRepository.recordArchive(ctx.db, {
          taskId: task.id,
          outputIndex: 0,
          patch: archived(0),
          file: fileOf(task, 0),
        }),
      ]);
      expect(results.map((r) => r.completed).filter((r) => r !== null)).toEqual([
        { id: task.id, workspaceId: task.workspaceId, callbackRoundStart: 1, callback: true },
      ]);
      // Of the two runs of output 0, one wrote the row and the other found it written.
      expect([results[0].fileCreated, results[2].fileCreated].sort()).toEqual([false, true]);
      expect(results[1].fileCreated).toBe(false);
      const after = await taskRepository.find(ctx.db, task.id);
      expect(after).toMatchObject({ status: 'completed', callbackState: 'pending' });
      expect(after!.output).toEqual({
        outputs: [
          { ...twoOutputs.outputs[0], ...archived(0) },
          { ...twoOutputs.outputs[1], archive_status: 'too_large' },
        ],
      });
      expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(1);
    }
  });

  it("a completion answers what its callback's job needs; its first attempt reads the new library file", async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
    const archived = (task: { id: string }, i: number) => ({
      archive_status: 'archived' as const,
      svc_file_id: `file_${task.id}_${i}`,
      svc_url: `https://files.example/${i}`,
    });
    /** A task running with its provider's `outputs` recorded, each pending archive. */
    const running = async (over: Parameters<typeof makeTask>[1], outputs = twoOutputs.outputs) => {
      const task = await makeTask(ctx.db, over);
      await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'up', upstreamUrls: null });
      await taskRepository.recordOutput(ctx.db, task.id, { outputs }, task.reserved);
      return task;
    };
    const completing = async (last: 0 | 1) => {
      const task = await running({ workspaceId: ws.id, callbackUrl: 'https://hooks.example/cb' });
      // Output 0's library row written by the completing statement itself (last 0), or by the one before it (last 1).
      const zero = () =>
        taskRepository.recordArchive(ctx.db, {
          taskId: task.id,
          outputIndex: 0,
          patch: archived(task, 0),
          file: fileOf(task, 0),
        });
      const one = () =>
        taskRepository.recordArchive(ctx.db, {
          taskId: task.id,
          outputIndex: 1,
          patch: { archive_status: 'too_large' },
        });
      expect((await (last === 0 ? one() : zero())).completed).toBeNull();
      const { completed } = await (last === 0 ? zero() : one());
      return { task, completed: completed! };
    };
    for (const last of [0, 1] as const) {
      const { task, completed } = await completing(last);
      expect(completed).toEqual({ id: task.id, workspaceId: ws.id, callbackRoundStart: 1, callback: true });
      const read = (await readAttemptContext(ctx.db, ctx.secrets, task.id))!;
      expect(read.archivedFile).toEqual({ id: `file_${task.id}_0`, workspaceId: ws.id });
    }
    // Without a callback, nothing to deliver.
    const plain = await running({}, twoOutputs.outputs.slice(0, 1));
    expect(
      (
        await taskRepository.recordArchive(ctx.db, {
          taskId: plain.id,
          outputIndex: 0,
          patch: { archive_status: 'failed' },
        })
      ).completed,
    ).toEqual({
      id: plain.id,
      workspaceId: plain.workspaceId,
      callbackRoundStart: 1,
      callback: false,
    });
    const fresh = await running({ callbackUrl: 'https://hooks.example/cb' }, twoOutputs.outputs.slice(0, 1));
    expect(
      (
        await taskRepository.recordArchive(ctx.db, {
          taskId: fresh.id,
          outputIndex: 0,
          patch: archived(fresh, 0),
          file: fileOf(fresh, 0),
        })
      ).completed,
    ).toEqual({
      id: fresh.id,
      workspaceId: fresh.workspaceId,
      callbackRoundStart: 1,
      callback: true,
    });
  });

  it('answers each archive outcome: the completion it made and whether it wrote the library row', async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
    const archived = (task: { id: string }, i: number) => ({
      archive_status: 'archived' as const,
      svc_file_id: `file_${task.id}_${i}`,
      svc_url: `https://files.example/${i}`,
    });
    const running = async (over: Parameters<typeof makeTask>[1], outputs = twoOutputs.outputs) => {
      const task = await makeTask(ctx.db, { workspaceId: ws.id, ...over });
      await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'up', upstreamUrls: null });
      await taskRepository.recordOutput(ctx.db, task.id, { outputs }, task.reserved);
      return task;
    };
    const one = twoOutputs.outputs.slice(0, 1);
    const [completing, half, failed, unknown, plain] = [
      await running({ callbackUrl: 'https://hooks.example/cb' }, one),
      await running({}),
      await running({}, one),
      await running({}),
      await running({}, one),
    ];
    const again = await running({}, one);
    await taskRepository.recordArchive(ctx.db, {
      taskId: again.id,
      outputIndex: 0,
      patch: archived(again, 0),
      file: fileOf(again, 0),
    });
    const items = [
      { taskId: completing.id, outputIndex: 0, patch: archived(completing, 0), file: fileOf(completing, 0) },
      { taskId: half.id, outputIndex: 1, patch: archived(half, 1), file: fileOf(half, 1) },
      { taskId: failed.id, outputIndex: 0, patch: { archive_status: 'failed' as const } },
      { taskId: unknown.id, outputIndex: 7, patch: archived(unknown, 7), file: fileOf(unknown, 7) },
      { taskId: 'tsk_gone', outputIndex: 0, patch: { archive_status: 'failed' as const } },
      { taskId: again.id, outputIndex: 0, patch: archived(again, 0), file: fileOf(again, 0) },
      { taskId: plain.id, outputIndex: 0, patch: { archive_status: 'too_large' as const } },
    ];
    const answers = [];
    for (const item of items) answers.push(await taskRepository.recordArchive(ctx.db, item));
    expect(answers.map((a) => [a.completed?.id ?? null, a.fileCreated])).toEqual([
      [completing.id, true], // the last output: completed, its library row written
      [null, true], // output 0 still pending: written, not completed
      [failed.id, false], // given up: completed without a row
      [null, false], // no such output: nothing
      [null, false], // no such task: nothing
      [null, false], // completed already: its row stands, nothing more
      [plain.id, false],
    ]);
    expect(answers[2]!.completed).toEqual({
      id: failed.id,
      workspaceId: ws.id,
      callbackRoundStart: 1,
      callback: false,
    });
    expect(await taskRepository.find(ctx.db, half.id)).toMatchObject({
      status: 'running',
      output: { outputs: [twoOutputs.outputs[0], { ...twoOutputs.outputs[1], ...archived(half, 1) }] },
    });
    expect(await taskRepository.find(ctx.db, unknown.id)).toMatchObject({ status: 'running', output: twoOutputs });
    expect(
      await ctx.db.file.count({ where: { taskId: { in: [completing.id, half.id, failed.id, unknown.id, again.id] } } }),
    ).toBe(3);
  });

  it('racing archives of the same tasks: each task completed exactly once', async () => {
    for (let round = 0; round < 5; round++) {
      const tasks: TaskRow[] = [];
      for (let i = 0; i < 8; i++) {
        const task = await makeTask(ctx.db, {});
        await taskRepository.markSubmitted(ctx.db, task.id, {
          channelId: 'ch_x',
          upstreamId: 'up',
          upstreamUrls: null,
        });
        await taskRepository.recordOutput(ctx.db, task.id, twoOutputs, task.reserved);
        tasks.push(task);
      }
      // Output 0 of every task twice, output 1 twice more, half of them in reverse order.
      const order = (i: number) => (i % 2 ? [...tasks].reverse() : tasks);
      const archive = (t: TaskRow, i: number) =>
        taskRepository.recordArchive(ctx.db, {
          taskId: t.id,
          outputIndex: i >> 1,
          patch: { archive_status: 'failed' },
        });
      const answers = await Promise.all([0, 1, 2, 3].map((i) => Promise.all(order(i).map((t) => archive(t, i)))));
      const completions = answers
        .flat()
        .filter((a) => a.completed !== null)
        .map((a) => a.completed!.id);
      expect(completions.sort()).toEqual(tasks.map((t) => t.id).sort());
    }
  });

  it('does not complete a task with an output still pending, nor touch a task with no such output', async () => {
    const task = await makeTask(ctx.db, {});
    await taskRepository.markSubmitted(ctx.db, task.id, { channelId: 'ch_x', upstreamId: 'up', upstreamUrls: null });
    await taskRepository.recordOutput(ctx.db, task.id, twoOutputs, task.reserved);
    expect(
      await taskRepository.recordArchive(ctx.db, {
        taskId: task.id,
        outputIndex: 1,
        patch: { archive_status: 'failed' },
      }),
    ).toEqual({ completed: null, fileCreated: false });
    expect(
      await taskRepository.recordArchive(ctx.db, {
        taskId: task.id,
        outputIndex: 7,
        patch: { archive_status: 'failed' },
        file: fileOf(task, 7),
      }),
    ).toEqual({ completed: null, fileCreated: false });
    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(0);
    expect(await taskRepository.find(ctx.db, task.id)).toMatchObject({ status: 'running', callbackState: 'none' });
  });
});

describe('the reconcilers’ indexes (partial: live tasks, pending or parked deliveries)', () => {
  /** The plan of `sql` with sequential scans priced out, so that a test table's few rows do not decide it. */
  const planOf = (sql: string) =>
    ctx.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
      const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${sql}`);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });

  it('serve each sweep and the parked gauge, whose conditions imply the indexes’ predicates', async () => {
    const before = `'2100-01-01'::timestamp(3)`;
    // staleInProvider, staleInArchive (as Prisma writes them), stalePendingDeliveries and gensvc_count_parked.
    const sweeps: [string, string][] = [
      [
        `SELECT id FROM "Task" WHERE (status = 'queued' AND "updatedAt" < ${before})
          OR (status = 'running' AND output IS NULL AND ("updatedAt" < ${before} OR "deadlineAt" < ${before}))
          ORDER BY "updatedAt" LIMIT 100`,
        'Task_status_updatedAt_idx',
      ],
      [
        `SELECT id FROM "Task" WHERE status = 'running' AND output IS NOT NULL AND "updatedAt" < ${before}
          ORDER BY "updatedAt" LIMIT 100`,
        'Task_status_updatedAt_idx',
      ],
      [
        `SELECT id FROM "Task" WHERE "callbackState" = 'pending' AND "updatedAt" < ${before}
          ORDER BY "updatedAt" LIMIT 100`,
        'Task_callbackState_updatedAt_idx',
      ],
      [`SELECT count(*)::int AS n FROM "Task" WHERE "callbackState" = 'parked'`, 'Task_callbackState_updatedAt_idx'],
    ];
    for (const [sql, index] of sweeps) expect(await planOf(sql)).toContain(index);
    // A finished task is in neither: a query over every status cannot use the status index, nor one over delivered
    // tasks the callbackState index.
    expect(
      await planOf(`SELECT id FROM "Task" WHERE status = 'completed' ORDER BY "updatedAt" LIMIT 100`),
    ).not.toContain('Task_status_updatedAt_idx');
    expect(
      await planOf(`SELECT id FROM "Task" WHERE "callbackState" = 'delivered' ORDER BY "updatedAt" LIMIT 100`),
    ).not.toContain('Task_callbackState_updatedAt_idx');
  });
});
