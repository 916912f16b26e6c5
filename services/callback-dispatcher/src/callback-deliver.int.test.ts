// callback.deliver in-process, with a real worker on a real queue, real Postgres and Redis, and a real HTTPS
// receiver on 127.0.0.1 (let through by OUTBOUND_ALLOW_CIDRS, its certificate from the test CA handed to the
// client). The retry schedule is scaled down to 0, 400, 800, 1200, 1600 ms and the timeout to 500 ms.
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { verifyFileToken } from '@gensvc/auth';
import { CallbackDeliver, taskEnvelope, type TaskOutputEntry } from '@gensvc/contracts';
import { callbackRepository, fileRepository, newId, SecretBoxError, taskRepository } from '@gensvc/db';
import { createLogger, createMetrics } from '@gensvc/observability';
import { systemLookup, type ResolvedAddress } from '@gensvc/outbound';
import {
  closeWorkers,
  createQueueEvents,
  createQueues,
  ensureJob,
  jobIdFor,
  scheduleCallback,
  taskJobRef,
  type Queues,
} from '@gensvc/queue';
import { eventually, makeTask, startTlsServer, useTestContext, type TlsTestServer } from '@gensvc/testing';
import {
  CALLBACK_SECRET_PATTERN,
  deliveryIdFor,
  newCallbackSecret,
  verifyCallback,
  webhookIdFor,
} from '@gensvc/webhooks';
import type { QueueEvents, Worker } from 'bullmq';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { DispatcherDeps } from './deps';
import { countDeliveries } from './dispatch-metrics';
import { startDispatcherWorker } from './dispatcher-worker';
import type { DeliverOutcome } from './handlers/callback-deliver';

const SCHEDULE = [0, 400, 800, 1200, 1600];
const TIMEOUT_MS = 500;
/**
 * When the late receiver answers: far past the timeout, so an attempt that was not cut at the timeout would have
 * seen its answer (a bound on how the attempt ended, not on how fast a loaded machine ran it).
 */
const LATE_ANSWER_MS = TIMEOUT_MS + 4_000;
const PUBLIC_BASE_URL = 'https://api.gensvc.test';
const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  CALLBACK_RETRY_SCHEDULE: SCHEDULE.map((ms) => `${ms}ms`).join(','),
  CALLBACK_TIMEOUT_MS: String(TIMEOUT_MS),
  PUBLIC_BASE_URL,
});

interface Arrival {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** performance.now() when the whole body had arrived. */
  at: number;
}

/** How a receiver path answers its n-th request (1-based). */
type Answer = (res: ServerResponse, n: number) => void;
const ok: Answer = (res) => res.end('ok');
const status =
  (code: number, body = ''): Answer =>
  (res) => {
    res.statusCode = code;
    res.end(body);
  };

describe('callback.deliver', () => {
  let receiver: TlsTestServer;
  const answers = new Map<string, Answer>();
  const arrivals: Arrival[] = [];
  /** Host names the test's resolver answers itself (a hostile DNS); the rest go to the system's. */
  const dns = new Map<string, ResolvedAddress[]>();
  const logLines: Record<string, unknown>[] = [];
  /** Each finished job's outcome, by job id: what each attempt decided next (the delay of the one it scheduled). */
  const outcomes = new Map<string, DeliverOutcome>();
  let queues: Queues;
  let events: QueueEvents;
  let worker: Worker;
  const metrics = createMetrics('callback-dispatcher-test');
  /** gensvc_callback_attempts_total by outcome, as this worker counted them. */
  const attemptsCounted = async () =>
    Object.fromEntries((await metrics.callbackAttempts.get()).values.map((v) => [v.labels.outcome, v.value]));

  beforeAll(async () => {
    receiver = await startTlsServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = new URL(req.url ?? '/', 'https://x').pathname;
        const n = arrivals.filter((a) => a.path === path).length + 1;
        arrivals.push({ path, headers: req.headers, body: Buffer.concat(chunks), at: performance.now() });
        (answers.get(path) ?? ok)(res, n);
      });
    });
    queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
    events = createQueueEvents({ queue: 'callbacks', connection: ctx.redis, prefix: ctx.config.queuePrefix });
    events.on(
      'completed',
      ({ jobId, returnvalue }) => void outcomes.set(jobId, returnvalue as unknown as DeliverOutcome),
    );
    await events.waitUntilReady();
    const deps: DispatcherDeps = {
      config: ctx.config,
      db: ctx.db,
      secrets: ctx.secrets,
      queues,
      logger: createLogger({
        service: 'callback-dispatcher-test',
        level: 'info',
        destination: { write: (line: string) => void logLines.push(JSON.parse(line)) },
      }),
      outbound: { ca: receiver.caPem, lookup: async (host) => dns.get(host) ?? systemLookup(host) },
    };
    worker = startDispatcherWorker(deps, { connection: ctx.redis, prefix: ctx.config.queuePrefix }, 8);
    countDeliveries(worker, metrics, ctx.db);
  });

  afterAll(async () => {
    await closeWorkers([worker], 10_000);
    await events.close();
    await queues.close();
    await receiver.close();
  });

  /** A receiver path of its own, answering as told; returns its callback URL. */
  function hook(answer: Answer = ok, base = receiver.url): { path: string; url: string } {
    const path = `/hooks/${randomBytes(6).toString('hex')}`;
    answers.set(path, answer);
    return { path, url: `${base}${path}` };
  }

  const arrivalsAt = (path: string) => arrivals.filter((a) => a.path === path);

  /**
   * That attempt `attempt + 1` followed attempt `attempt` at the schedule's `step`: attempt `attempt` scheduled it due
   * that step's delay after it ended (the delay left when it decided, moments after its end: one write; an earlier or
   * later step would be 400 ms off), and it reached the receiver no sooner. How much later it arrived is the
   * machine's load (job pick-up, queries, a TLS handshake), not the schedule, so it is not asserted.
   */
  async function expectFollowedAt(taskId: string, attempt: number, step: number, seen: Arrival[]) {
    await eventually(
      () => outcomes.has(jobIdFor(CallbackDeliver, [taskId, attempt])),
      `attempt ${attempt}'s outcome`,
      10_000,
    );
    const outcome = outcomes.get(jobIdFor(CallbackDeliver, [taskId, attempt]));
    expect(outcome).toMatchObject({ outcome: 'attempted', then: { step: 'retry', attempt: attempt + 1 } });
    const { delayMs } = (outcome as { then: { delayMs: number } }).then;
    expect(delayMs).toBeLessThanOrEqual(SCHEDULE[step]!);
    expect(delayMs).toBeGreaterThan(SCHEDULE[step - 1]!);
    expect(seen[attempt]!.at - seen[attempt - 1]!.at).toBeGreaterThanOrEqual(SCHEDULE[step]!);
  }

  /** A task created (the price held) and submitted to its provider, in a new workspace unless `workspaceId` says. */
  async function submittedTask(callbackUrl: string, workspaceId?: string) {
    const task = await makeTask(ctx.db, { callbackUrl, ...(workspaceId && { workspaceId }) });
    expect(
      await taskRepository.markSubmitted(ctx.db, task.id, {
        channelId: 'ch_sim',
        upstreamId: 'pred_1',
        upstreamUrls: null,
      }),
    ).toBe(true);
    return task;
  }

  /** Output 0's library row and the entry that names it, as the archiver writes them. */
  function archivedOutput(taskId: string, workspaceId: string) {
    const fileId = newId('file');
    const storageKey = `workspaces/${workspaceId}/files/${fileId}`;
    const file = {
      id: fileId,
      workspaceId,
      source: 'generated' as const,
      purpose: 'output',
      filename: `${taskId}-0.png`,
      contentType: 'image/png',
      bytes: 1234n,
      storageKey,
      expiresAt: new Date(Date.now() + 30 * 86_400_000),
      taskId,
      outputIndex: 0,
    };
    return {
      fileId,
      file,
      patch: {
        archive_status: 'archived' as const,
        svc_file_id: fileId,
        svc_url: `https://files.gensvc.test/b/${storageKey}`,
      },
    };
  }

  /**
   * A task taken through the repositories' state machine to completed with its callback pending: created (the price
   * held), submitted, its output recorded (settled) and archived as a visible file unless told otherwise.
   */
  async function completedTask(callbackUrl: string, opts: { archived?: boolean } = {}) {
    const { id, workspaceId } = await submittedTask(callbackUrl);
    const entry: Record<string, string | number> = {
      kind: 'image',
      url: 'https://provider.example/out/1.png',
      width: 512,
      height: 512,
      content_type: 'image/png',
    };
    let fileId: string | null = null;
    if (opts.archived ?? true) {
      const output = archivedOutput(id, workspaceId);
      fileId = output.fileId;
      await fileRepository.create(ctx.db, output.file);
      Object.assign(entry, output.patch);
    } else {
      entry.archive_status = 'failed';
    }
    expect(
      await taskRepository.recordOutput(ctx.db, id, { outputs: [entry as TaskOutputEntry] }, 40_000n),
    ).toMatchObject({ charged: 40_000n });
    expect(await taskRepository.completeIfArchived(ctx.db, id)).toEqual({
      id,
      workspaceId,
      callbackRoundStart: 1,
      callback: true,
    });
    const task = await ctx.db.task.findUniqueOrThrow({ where: { id } });
    expect(task).toMatchObject({ status: 'completed', callbackState: 'pending', callbackRoundStart: 1 });
    return { task, fileId };
  }

  /** A task of `workspaceId` completed as the archiver completes one (recordArchive, its output archived as a file). */
  async function completedByArchive(callbackUrl: string, workspaceId: string) {
    const { id } = await submittedTask(callbackUrl, workspaceId);
    const entry = {
      kind: 'image',
      url: 'https://provider.example/out/1.png',
      archive_status: 'pending',
    } as TaskOutputEntry;
    expect(await taskRepository.recordOutput(ctx.db, id, { outputs: [entry] }, 40_000n)).toMatchObject({
      charged: 40_000n,
    });
    const { fileId, file, patch } = archivedOutput(id, workspaceId);
    const { completed } = await taskRepository.recordArchive(ctx.db, { taskId: id, outputIndex: 0, patch, file });
    expect(completed).toMatchObject({ id, callbackRoundStart: 1, callback: true });
    return { task: await taskOf(id), fileId };
  }

  /** Runs the job of (task, attempt) — again, if it ran before — and returns its outcome. */
  async function run(taskId: string, attempt: number): Promise<DeliverOutcome> {
    await ensureJob(queues, CallbackDeliver, { taskId, attempt });
    const job = await queues.get('callbacks').getJob(jobIdFor(CallbackDeliver, [taskId, attempt]));
    return job!.waitUntilFinished(events, 20_000);
  }

  /**
   * Attempt `attempt` of the task recorded as a run of the dispatcher records it (its receiver answered `statusCode`).
   */
  const recordAttempt = (
    task: { id: string; workspaceId: string; callbackUrl: string | null },
    attempt: number,
    statusCode: number,
    at = new Date(),
  ) =>
    taskRepository
      .recordDeliveryAttempt(ctx.db, {
        input: {
          workspaceId: task.workspaceId,
          taskId: task.id,
          attempt,
          deliveryId: deliveryIdFor(task.id, attempt),
          url: task.callbackUrl!,
          statusCode,
          durationMs: 10,
          error: statusCode < 300 ? null : `http_status: the receiver answered ${statusCode}.`,
          responseHead: null,
          at,
        },
        decidedOn: { callbackRoundStart: 1 },
        step: null,
      })
      .then((r) => r.recorded);
  const jobOf = (taskId: string, attempt: number) =>
    queues.get('callbacks').getJob(jobIdFor(CallbackDeliver, [taskId, attempt]));
  const attemptsOf = (taskId: string) => callbackRepository.attempts(ctx.db, taskId);
  const taskOf = (taskId: string) => ctx.db.task.findUniqueOrThrow({ where: { id: taskId } });
  const stateIs = (taskId: string, state: string) => async () => (await taskOf(taskId)).callbackState === state;

  it('leaves no completed job behind: each scheduled attempt is removed as it completes, its row kept', async () => {
    const { path, url } = hook((res, n) => status(n === 1 ? 503 : 200)(res, n));
    const { task } = await completedTask(url);
    await scheduleCallback(queues, taskJobRef(task), 1, { first: true });
    await eventually(stateIs(task.id, 'delivered'), 'the second attempt to deliver', 10_000);
    expect(arrivalsAt(path)).toHaveLength(2);
    expect((await attemptsOf(task.id)).map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 503],
      [2, 200],
    ]);
    // The first attempt's job (added as a completion adds it) and the second's (added by the first, as a retry).
    for (const attempt of [1, 2]) {
      await eventually(
        async () => (await jobOf(task.id, attempt)) === undefined,
        `attempt ${attempt}'s job to be removed`,
      );
      expect(outcomes.get(jobIdFor(CallbackDeliver, [task.id, attempt]))).toMatchObject({
        outcome: 'attempted',
        attempt,
      });
    }
  });

  it("a completion's first attempt sends the envelope GET renders, signed with the current secrets", async () => {
    const { path, url } = hook();
    const { workspaceId } = await makeTask(ctx.db, {});
    const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, workspaceId, newCallbackSecret)).secret;
    const deliver = async (done: Awaited<ReturnType<typeof completedByArchive>>) => {
      await scheduleCallback(queues, taskJobRef(done.task), 1, { first: true });
      await eventually(stateIs(done.task.id, 'delivered'), 'the first attempt to deliver', 10_000);
      const arrival = arrivalsAt(path).find((a) => a.headers['svc-task-id'] === done.task.id)!;
      return { arrival, body: JSON.parse(arrival.body.toString('utf8')) };
    };

    const next = await completedByArchive(url, workspaceId);
    const { arrival, body } = await deliver(next);
    expect(() => verifyCallback(arrival.body, arrival.headers, [secret], { toleranceSeconds: 300 })).not.toThrow();
    // Exactly the envelope GET renders, as the task was when sent, plus delivered_at and a fresh download link.
    const download = { url: body.output.download_url, expiresAt: new Date(body.output.download_expires_at) };
    const deliveredAt = new Date(body.delivered_at);
    expect(body).toEqual(taskEnvelope(next.task, { currency: 'USD', download, deliveredAt }));
    const token = new URL(download.url).searchParams.get('token')!;
    expect(await verifyFileToken(ctx.config.signingSecret, token)).toEqual({ fileId: next.fileId, workspaceId });
    expect((await attemptsOf(next.task.id)).map((a) => [a.attempt, a.statusCode])).toEqual([[1, 200]]);

    // Rotated: the attempt signs with the new secret and the previous one (its overlap).
    const rotated = (await callbackRepository.rotate(ctx.db, ctx.secrets, workspaceId, newCallbackSecret)).secret;
    const after = await completedByArchive(url, workspaceId);
    const third = await deliver(after);
    expect(third.arrival.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    const { arrival: signed } = third;
    expect(() => verifyCallback(signed.body, signed.headers, [rotated], { toleranceSeconds: 300 })).not.toThrow();
  });

  it('first attempts of tasks completed together run as their own jobs: signed, sent, recorded, retried', async () => {
    const ok1 = hook();
    const flaky = hook((res, n) => status(n === 1 ? 503 : 200)(res, n));
    const { workspaceId } = await makeTask(ctx.db, {});
    const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, workspaceId, newCallbackSecret)).secret;
    const done = [
      await completedByArchive(ok1.url, workspaceId),
      await completedByArchive(flaky.url, workspaceId),
      await completedByArchive(ok1.url, workspaceId),
    ];
    const counted = await attemptsCounted();
    await Promise.all(done.map((d) => scheduleCallback(queues, taskJobRef(d.task), 1, { first: true })));
    const ids = done.map((d) => d.task.id);
    for (const id of ids) await eventually(stateIs(id, 'delivered'), `task ${id} delivered`, 10_000);

    const jobIds = [...ids.map((id) => jobIdFor(CallbackDeliver, [id, 1])), jobIdFor(CallbackDeliver, [ids[1]!, 2])];
    for (const jobId of jobIds) await eventually(() => outcomes.has(jobId), `job ${jobId} completed`);
    expect(ids.map((id) => outcomes.get(jobIdFor(CallbackDeliver, [id, 1])))).toEqual([
      expect.objectContaining({ outcome: 'attempted', attempt: 1, statusCode: 200 }),
      expect.objectContaining({
        outcome: 'attempted',
        attempt: 1,
        statusCode: 503,
        then: expect.objectContaining({ step: 'retry', attempt: 2 }),
      }),
      expect.objectContaining({ outcome: 'attempted', attempt: 1, statusCode: 200 }),
    ]);
    expect(outcomes.get(jobIdFor(CallbackDeliver, [ids[1]!, 2]))).toMatchObject({
      outcome: 'attempted',
      attempt: 2,
      statusCode: 200,
    });
    expect((await attemptsOf(ids[1]!)).map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 503],
      [2, 200],
    ]);
    // gensvc_callback_attempts_total counts each attempt, and the retry.
    await eventually(
      async () => (await attemptsCounted()).delivered === (counted.delivered ?? 0) + 3,
      'the attempts counted',
    );
    expect(await attemptsCounted()).toEqual({
      delivered: (counted.delivered ?? 0) + 3,
      failed: (counted.failed ?? 0) + 1,
    });

    // Each its own signed request, attempt row and log line.
    for (const id of ids) {
      const arrivals = [...arrivalsAt(ok1.path), ...arrivalsAt(flaky.path)].filter(
        (a) => a.headers['svc-task-id'] === id,
      );
      expect(arrivals.map((a) => a.headers['svc-delivery-id'])).toEqual(
        id === ids[1] ? [deliveryIdFor(id, 1), deliveryIdFor(id, 2)] : [deliveryIdFor(id, 1)],
      );
      for (const arrival of arrivals)
        expect(() => verifyCallback(arrival.body, arrival.headers, [secret], { toleranceSeconds: 300 })).not.toThrow();
      const lines = logLines.filter((l) => l.msg === 'callback: attempt' && l.taskId === id && l.attempt === 1);
      expect(lines).toEqual([expect.objectContaining({ jobId: jobIdFor(CallbackDeliver, [id, 1]) })]);
    }
  });

  it("a redelivery round's first attempt sends the envelope as the task is in its new round", async () => {
    const { path, url } = hook();
    const { workspaceId } = await makeTask(ctx.db, {});
    const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, workspaceId, newCallbackSecret)).secret;
    const done = await completedByArchive(url, workspaceId);
    await run(done.task.id, 1);
    await eventually(stateIs(done.task.id, 'delivered'), 'round 1 delivered', 10_000);
    const round = (await taskRepository.redeliver(ctx.db, workspaceId, done.task.id))!;
    expect(round).toEqual({ attempt: 2 });
    // The task as the attempt finds it: pending, in round 2.
    const sent = await taskOf(done.task.id);
    await scheduleCallback(queues, taskJobRef(done.task), round.attempt, { promote: true });
    await eventually(async () => (await attemptsOf(done.task.id)).length === 2, 'round 2 attempted', 10_000);
    const arrival = arrivalsAt(path).find((a) => a.headers['svc-delivery-id'] === deliveryIdFor(done.task.id, 2))!;
    expect(() => verifyCallback(arrival.body, arrival.headers, [secret], { toleranceSeconds: 300 })).not.toThrow();
    const body = JSON.parse(arrival.body.toString('utf8'));
    const download = { url: body.output.download_url, expiresAt: new Date(body.output.download_expires_at) };
    expect(body).toEqual(taskEnvelope(sent, { currency: 'USD', download, deliveredAt: new Date(body.delivered_at) }));
    expect((await attemptsOf(done.task.id)).map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 200],
      [2, 200],
    ]);
    await eventually(stateIs(done.task.id, 'delivered'), 'round 2 delivered', 10_000);
  });

  it('delivers the signed envelope with delivered_at and a fresh link; logs and records the attempt', async () => {
    const { path, url } = hook(status(200, 'thanks'));
    const { task: before, fileId } = await completedTask(url);
    const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, before.workspaceId, newCallbackSecret)).secret;
    const sentAfter = Date.now();

    const outcome = await run(before.id, 1);
    expect(outcome).toEqual({
      outcome: 'attempted',
      attempt: 1,
      statusCode: 200,
      error: null,
      then: { step: 'delivered' },
    });

    const [arrival, ...more] = arrivalsAt(path);
    expect(more).toHaveLength(0);
    const raw = arrival!.body;
    expect(() => verifyCallback(raw, arrival!.headers, [secret], { toleranceSeconds: 300 })).not.toThrow();
    expect(() => verifyCallback(raw, arrival!.headers, [newCallbackSecret()])).toThrow();
    expect(arrival!.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'gensvc-callbacks/1',
      'svc-task-id': before.id,
      'svc-delivery-id': deliveryIdFor(before.id, 1),
    });
    expect(arrival!.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    // Exactly the envelope GET renders, as the task was when sent, plus delivered_at and the download link.
    const body = JSON.parse(raw.toString('utf8'));
    const download = { url: body.output.download_url, expiresAt: new Date(body.output.download_expires_at) };
    expect(body).toEqual(taskEnvelope(before, { currency: 'USD', download, deliveredAt: new Date(body.delivered_at) }));
    expect(body).toMatchObject({
      task_id: before.id,
      status: 'completed',
      cost: { amount: 0.04, currency: 'USD' },
      output: { file_id: fileId },
    });
    expect(download.url.startsWith(`${PUBLIC_BASE_URL}/api/v1/files/${fileId}/content?token=`)).toBe(true);
    const token = new URL(download.url).searchParams.get('token')!;
    expect(await verifyFileToken(ctx.config.signingSecret, token)).toEqual({ fileId, workspaceId: before.workspaceId });
    expect(download.expiresAt.getTime()).toBeGreaterThan(sentAfter + 3500_000);

    const after = await taskOf(before.id);
    expect(after).toMatchObject({ callbackState: 'delivered', deliveredAt: new Date(body.delivered_at) });
    const rows = await attemptsOf(before.id);
    expect(rows).toEqual([
      expect.objectContaining({
        attempt: 1,
        deliveryId: deliveryIdFor(before.id, 1),
        url,
        statusCode: 200,
        error: null,
        responseHead: 'thanks',
        workspaceId: before.workspaceId,
        createdAt: new Date(body.delivered_at),
      }),
    ]);
    expect(rows[0]!.durationMs).toBeGreaterThanOrEqual(0);
    expect(rows[0]!.durationMs).toBeLessThan(TIMEOUT_MS);
    expect(await jobOf(before.id, 2)).toBeUndefined();

    const line = logLines.find((l) => l.taskId === before.id && l.msg === 'callback: attempt');
    expect(line).toMatchObject({
      level: 'info',
      attempt: 1,
      deliveryId: deliveryIdFor(before.id, 1),
      statusCode: 200,
      durationMs: rows[0]!.durationMs,
    });
  });

  it('retries on the schedule while the receiver fails, parks after the fifth failure, and stops', async () => {
    const { path, url } = hook(status(500, 'down for maintenance'));
    const { task } = await completedTask(url);

    await run(task.id, 1);
    await eventually(stateIs(task.id, 'parked'), 'the delivery parked', 15_000);

    const seen = arrivalsAt(path);
    expect(seen.map((a) => a.headers['svc-delivery-id'])).toEqual(
      [1, 2, 3, 4, 5].map((n) => deliveryIdFor(task.id, n)),
    );
    for (let k = 1; k < seen.length; k++) await expectFollowedAt(task.id, k, k, seen);
    const rows = await attemptsOf(task.id);
    expect(rows.map((r) => [r.attempt, r.statusCode, r.responseHead])).toEqual(
      [1, 2, 3, 4, 5].map((n) => [n, 500, 'down for maintenance']),
    );
    expect(rows.every((r) => r.error === 'http_status: the receiver answered 500.')).toBe(true);
    // Parked for good: no sixth attempt is queued, and the result stays readable.
    expect(await jobOf(task.id, 6)).toBeUndefined();
    expect(await taskOf(task.id)).toMatchObject({ status: 'completed', callbackState: 'parked', deliveredAt: null });
    const logged = logLines.filter((l) => l.taskId === task.id);
    expect(logged.filter((l) => l.msg === 'callback: attempt').map((l) => [l.attempt, l.statusCode])).toEqual(
      [1, 2, 3, 4, 5].map((n) => [n, 500]),
    );
    expect(logged.find((l) => l.level === 'warn')).toMatchObject({ attempt: 5, msg: expect.stringMatching(/parked/) });
  });

  it('is delivered on the third attempt when the receiver fails twice', async () => {
    const { path, url } = hook((res, n) => status(n <= 2 ? 503 : 204)(res, n));
    const { task } = await completedTask(url);

    await run(task.id, 1);
    await eventually(stateIs(task.id, 'delivered'), 'the delivery', 10_000);

    expect(arrivalsAt(path)).toHaveLength(3);
    const rows = await attemptsOf(task.id);
    expect(rows.map((r) => [r.attempt, r.statusCode])).toEqual([
      [1, 503],
      [2, 503],
      [3, 204],
    ]);
    expect((await taskOf(task.id)).deliveredAt).toEqual(rows[2]!.createdAt);
    expect(await jobOf(task.id, 4)).toBeUndefined();
  });

  it('counts an answer later than the timeout as a failure and schedules the next attempt', async () => {
    const { url } = hook((res, n) => (n === 1 ? setTimeout(() => res.end('late'), LATE_ANSWER_MS) : res.end('ok')));
    const { task } = await completedTask(url);

    const outcome = await run(task.id, 1);
    expect(outcome).toMatchObject({
      outcome: 'attempted',
      statusCode: null,
      error: expect.stringMatching(/^unreachable: /),
      then: { step: 'retry', attempt: 2 },
    });
    const [first] = await attemptsOf(task.id);
    expect(first).toMatchObject({ attempt: 1, statusCode: null, responseHead: null });
    expect(first!.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(first!.durationMs).toBeLessThan(LATE_ANSWER_MS);

    await eventually(stateIs(task.id, 'delivered'), 'delivery by the second attempt', 5_000);
    expect((await attemptsOf(task.id)).map((r) => [r.attempt, r.statusCode])).toEqual([
      [1, null],
      [2, 200],
    ]);
  });

  it('does not follow a redirect: the 302 is a failure and its target gets nothing', async () => {
    const target = await startTlsServer((_req, res) => res.end('you should not be here'));
    try {
      const { path, url } = hook((res, n) => {
        if (n > 1) return res.end('ok');
        res.statusCode = 302;
        res.setHeader('location', `${target.url}/landing`);
        res.end();
      });
      const { task } = await completedTask(url);

      const outcome = await run(task.id, 1);
      expect(outcome).toMatchObject({
        outcome: 'attempted',
        statusCode: 302,
        error: expect.stringMatching(/^redirect: /),
        then: { step: 'retry', attempt: 2 },
      });
      await eventually(stateIs(task.id, 'delivered'), 'delivery by the second attempt', 5_000);
      expect(arrivalsAt(path)).toHaveLength(2);
      expect((await attemptsOf(task.id)).map((r) => r.statusCode)).toEqual([302, 200]);
      expect(target.requests).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it('checks the address again at delivery: a name now resolving to a private address gets nothing', async () => {
    // The receiver's certificate names localhost: once the name resolves to it again, the delivery goes through.
    const { path, url } = hook(ok, `https://localhost:${receiver.port}`);
    const mixed = hook(ok, `https://mixed.gensvc.test:${receiver.port}`);
    const { task } = await completedTask(url);
    const { task: other } = await completedTask(mixed.url);
    dns.set('localhost', [{ address: '10.0.0.5', family: 4 }]);
    // One allowed address among them is not enough: every address must pass.
    dns.set('mixed.gensvc.test', [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.5', family: 4 },
    ]);
    try {
      for (const t of [task, other]) {
        const outcome = await run(t.id, 1);
        // The delivery log, which the workspace reads, names the rule that refused the address, never the address.
        const error = 'address_not_allowed: private_address (private)';
        const then = { step: 'retry', attempt: 2 };
        expect(outcome).toMatchObject({ outcome: 'attempted', statusCode: null, error, then });
        expect(await attemptsOf(t.id)).toEqual([expect.objectContaining({ attempt: 1, statusCode: null, error })]);
      }
      expect(arrivalsAt(path)).toHaveLength(0);
      expect(arrivalsAt(mixed.path)).toHaveLength(0);
      expect(receiver.requests.filter((r) => r.url === path || r.url === mixed.path)).toHaveLength(0);
    } finally {
      dns.set('localhost', [{ address: '127.0.0.1', family: 4 }]);
    }
    await eventually(stateIs(task.id, 'delivered'), 'delivery once the name resolves to the receiver again', 5_000);
    expect(arrivalsAt(path)).toHaveLength(1);
    expect(arrivalsAt(mixed.path)).toHaveLength(0);
  });

  it('signs with both secrets after a rotation, so either one verifies', async () => {
    const { path, url } = hook();
    const { task } = await completedTask(url);
    const old = (await callbackRepository.secret(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    const rotated = (await callbackRepository.rotate(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    expect(rotated).not.toBe(old);

    await run(task.id, 1);
    const [arrival] = arrivalsAt(path);
    expect(arrival!.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifyCallback(arrival!.body, arrival!.headers, [old]).deliveryId).toBe(deliveryIdFor(task.id, 1));
    expect(verifyCallback(arrival!.body, arrival!.headers, [rotated]).taskId).toBe(task.id);
    expect(() => verifyCallback(arrival!.body, arrival!.headers, [newCallbackSecret()])).toThrow(/no .*v1 matches/);
  });

  it('carries Standard Webhooks headers: one webhook-id per event across attempts, rounds', async () => {
    const { path, url } = hook((res, n) => status(n === 1 ? 503 : 200)(res, n));
    const { task } = await completedTask(url);
    const old = (await callbackRepository.secret(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    expect(old).toMatch(CALLBACK_SECRET_PATTERN);
    // Attempt 1 is refused, attempt 2 delivers; a redelivery's round starts at attempt 3 and sends the same event.
    await run(task.id, 1);
    await eventually(stateIs(task.id, 'delivered'), 'the retry to deliver', 10_000);
    const rotated = (await callbackRepository.rotate(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toEqual({ attempt: 3 });
    await run(task.id, 3);
    const seen = arrivalsAt(path);
    expect(seen).toHaveLength(3);

    const webhookId = webhookIdFor(task.id, 'completed');
    expect(webhookId).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(seen.map((a) => a.headers['webhook-id'])).toEqual([webhookId, webhookId, webhookId]);
    expect(seen.map((a) => a.headers['svc-delivery-id'])).toEqual([1, 2, 3].map((n) => deliveryIdFor(task.id, n)));
    for (const [i, arrival] of seen.entries()) {
      const { headers, body } = arrival;
      const signed = i < 2 ? [old] : [rotated, old];
      const t = Number(headers['webhook-timestamp']);
      // The same attempt time in both schemes, and one signature per secret in each.
      expect(headers['svc-signature']).toMatch(
        new RegExp(`^t=${t},v1=[0-9a-f]{64}${i < 2 ? '' : ',v1=[0-9a-f]{64}'}$`),
      );
      expect(headers['webhook-signature']).toMatch(i < 2 ? /^v1,[A-Za-z0-9+/]{43}=$/ : /^v1,\S{44} v1,\S{44}$/);
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(60);
      // The official library verifies with each signing secret as the workspace reads it; the spec's recipe too.
      for (const secret of signed) {
        expect(new Webhook(secret).verify(body, headers as Record<string, string>)).toEqual(
          JSON.parse(body.toString()),
        );
        const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
        expect(headers['svc-signature']).toContain(`v1=${v1}`);
      }
      expect(() => new Webhook(newCallbackSecret()).verify(body, headers as Record<string, string>)).toThrow(
        WebhookVerificationError,
      );
      const tampered = Buffer.from(body.toString().replace('"completed"', '"failed"'));
      expect(() => new Webhook(signed[0]!).verify(tampered, headers as Record<string, string>)).toThrow(
        /No matching signature/,
      );
    }
  });

  it('signs with the current secret only once the previous one is retired, before its overlap ends', async () => {
    const { path, url } = hook();
    const { task } = await completedTask(url);
    const old = (await callbackRepository.secret(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    const rotated = (await callbackRepository.rotate(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    const retired = await callbackRepository.retirePrevious(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret);
    expect(retired).toMatchObject({ secret: rotated, previousSecret: null, previousExpiresAt: null });

    await run(task.id, 1);
    const [arrival] = arrivalsAt(path);
    expect(arrival!.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyCallback(arrival!.body, arrival!.headers, [rotated]).taskId).toBe(task.id);
    expect(() => verifyCallback(arrival!.body, arrival!.headers, [old])).toThrow(/no .*v1 matches/);
  });

  it('keeps the secrets sealed at rest: a dump of the row holds neither, and signatures still verify', async () => {
    const { path, url } = hook();
    const { task } = await completedTask(url);
    const old = (await callbackRepository.secret(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    const current = (await callbackRepository.rotate(ctx.db, ctx.secrets, task.workspaceId, newCallbackSecret)).secret;
    const row = await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: task.workspaceId } });
    const kid = ctx.secrets.currentKeyId;
    for (const stored of [row.secret, row.previousSecret!]) {
      expect(stored).toMatch(new RegExp(`^v1:${kid}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$`));
      for (const plain of [old, current, old.slice(6), current.slice(6)]) expect(stored).not.toContain(plain);
    }

    await run(task.id, 1);
    const [arrival] = arrivalsAt(path);
    // The spec's recipe (§6): hex HMAC-SHA256 over "<t>.<raw body>" under the secret the API shows.
    const header = String(arrival!.headers['svc-signature']);
    const t = /^t=(\d+)/.exec(header)![1]!;
    const signed = header
      .split(',')
      .filter((p) => p.startsWith('v1='))
      .map((p) => p.slice(3));
    const expected = (secret: string) =>
      createHmac('sha256', secret).update(`${t}.`).update(arrival!.body).digest('hex');
    expect(signed).toEqual([expected(current), expected(old)]);
    // A sealed value copied into another workspace's row opens for no one there.
    const { task: other } = await completedTask(url);
    await callbackRepository.secret(ctx.db, ctx.secrets, other.workspaceId, newCallbackSecret);
    await ctx.db.callbackSecret.update({ where: { workspaceId: other.workspaceId }, data: { secret: row.secret } });
    await expect(
      callbackRepository.secret(ctx.db, ctx.secrets, other.workspaceId, newCallbackSecret),
    ).rejects.toBeInstanceOf(SecretBoxError);
  });

  it('a redelivery after parking starts a new round of five: numbers continue, the schedule restarts', async () => {
    const { path, url } = hook((res, n) => status(n <= 6 ? 500 : 200)(res, n));
    const { task } = await completedTask(url);
    await run(task.id, 1);
    await eventually(stateIs(task.id, 'parked'), 'the first round parked', 15_000);

    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toMatchObject({ attempt: 6 });
    // What the edge's redeliver route does.
    await ensureJob(
      queues,
      CallbackDeliver,
      { taskId: task.id, workspaceId: task.workspaceId, attempt: 6 },
      { promote: true },
    );
    await eventually(stateIs(task.id, 'delivered'), 'delivery in the second round', 10_000);

    const seen = arrivalsAt(path);
    expect(seen.map((a) => a.headers['svc-delivery-id'])).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => deliveryIdFor(task.id, n)),
    );
    // Attempt 7 is the second of its round: it waits the schedule's second delay.
    await expectFollowedAt(task.id, 6, 1, seen);
    expect((await attemptsOf(task.id)).map((r) => r.statusCode)).toEqual([500, 500, 500, 500, 500, 500, 200]);
    expect(await taskOf(task.id)).toMatchObject({ callbackRoundStart: 6, callbackState: 'delivered' });
  });

  it('a re-run of an attempt already recorded sends nothing again', async () => {
    const { path, url } = hook((res, n) => status(n === 1 ? 500 : 200)(res, n));
    const { task } = await completedTask(url);

    expect(await run(task.id, 1)).toMatchObject({
      outcome: 'attempted',
      statusCode: 500,
      then: { step: 'retry', attempt: 2 },
    });
    // The same job again while attempt 2 waits its delay.
    expect(await run(task.id, 1)).toMatchObject({
      outcome: 'already_recorded',
      attempt: 1,
      then: { step: 'retry', attempt: 2 },
    });
    expect(arrivalsAt(path)).toHaveLength(1);

    await eventually(stateIs(task.id, 'delivered'), 'delivery by the second attempt', 5_000);
    expect(await run(task.id, 2)).toEqual({ outcome: 'skipped', reason: 'not_pending' });
    expect(arrivalsAt(path).map((a) => a.headers['svc-delivery-id'])).toEqual([
      deliveryIdFor(task.id, 1),
      deliveryIdFor(task.id, 2),
    ]);
    expect(await attemptsOf(task.id)).toHaveLength(2);
  });

  it('resumes what a run that died after recording left undone: the next job, or the delivered mark', async () => {
    const failed = hook();
    const { task } = await completedTask(failed.url);
    // Attempt 1 failed 1 s ago and its run died before scheduling attempt 2 (whose 400 ms have passed).
    expect(await recordAttempt(task, 1, 502, new Date(Date.now() - 1000))).toBe(true);
    expect(await run(task.id, 1)).toMatchObject({
      outcome: 'already_recorded',
      then: { step: 'retry', attempt: 2, delayMs: 0 },
    });
    await eventually(stateIs(task.id, 'delivered'), 'delivery by attempt 2', 5_000);
    expect(arrivalsAt(failed.path).map((a) => a.headers['svc-delivery-id'])).toEqual([deliveryIdFor(task.id, 2)]);

    const succeeded = hook();
    const { task: other } = await completedTask(succeeded.url);
    const at = new Date(Date.now() - 500);
    expect(await recordAttempt(other, 1, 200, at)).toBe(true);
    expect(await run(other.id, 1)).toEqual({ outcome: 'already_recorded', attempt: 1, then: { step: 'delivered' } });
    expect(await taskOf(other.id)).toMatchObject({ callbackState: 'delivered', deliveredAt: at });
    expect(arrivalsAt(succeeded.path)).toHaveLength(0);
  });

  it('a run that finds its attempt recorded meanwhile by a concurrent run leaves the outcome to that run', async () => {
    const { path, url } = hook();
    const { task } = await completedTask(url);
    answers.set(path, (res) => {
      // The other run of the same attempt records it while this one waits for the answer.
      void recordAttempt(task, 1, 500).then(() => res.end('ok'));
    });

    expect(await run(task.id, 1)).toEqual({ outcome: 'raced', attempt: 1 });
    expect(arrivalsAt(path)).toHaveLength(1);
    expect((await attemptsOf(task.id)).map((r) => r.statusCode)).toEqual([500]);
    expect(await taskOf(task.id)).toMatchObject({ callbackState: 'pending' });
  });

  it('sends nothing for an attempt of an earlier round, a delivered task, or one ahead of the next', async () => {
    const { path, url } = hook();
    const { task } = await completedTask(url);
    for (const attempt of [1, 2]) {
      expect(await recordAttempt(task, attempt, 500)).toBe(true);
    }
    expect(await taskRepository.redeliver(ctx.db, task.workspaceId, task.id)).toMatchObject({ attempt: 3 });
    expect(await run(task.id, 2)).toEqual({ outcome: 'skipped', reason: 'stale_round' });
    expect(await run(task.id, 4)).toEqual({ outcome: 'skipped', reason: 'not_next' });
    expect(arrivalsAt(path)).toHaveLength(0);

    expect(await run(task.id, 3)).toMatchObject({ outcome: 'attempted', statusCode: 200, then: { step: 'delivered' } });
    expect(await run(task.id, 3)).toEqual({ outcome: 'skipped', reason: 'not_pending' });
    expect(await run(task.id, 1)).toEqual({ outcome: 'skipped', reason: 'not_pending' });
    expect(arrivalsAt(path)).toHaveLength(1);
  });

  it('keeps the first 1 KiB of any answer; none of a 204; what arrived of a 2xx whose body stalls', async () => {
    const long = `${'é'.repeat(300)}${'x'.repeat(4000)}`;
    const longHook = hook((res) => {
      // Chunked, no declared length, more than the head.
      res.write(long.slice(0, 10));
      setTimeout(() => res.end(long.slice(10)), 20);
    });
    const noneHook = hook((res) => res.writeHead(204).end());
    const stallHook = hook((res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('accepted');
    });
    const [a, b, c] = await Promise.all([
      completedTask(longHook.url),
      completedTask(noneHook.url),
      completedTask(stallHook.url),
    ]);
    await Promise.all([run(a.task.id, 1), run(b.task.id, 1), run(c.task.id, 1)]);

    const [longRow] = await attemptsOf(a.task.id);
    expect(longRow).toMatchObject({
      statusCode: 200,
      error: null,
      responseHead: Buffer.from(long).subarray(0, 1024).toString('utf8'),
    });
    expect(await attemptsOf(b.task.id)).toEqual([
      expect.objectContaining({ statusCode: 204, error: null, responseHead: null }),
    ]);
    // The status came within the timeout, so the attempt delivered; its body was cut at the timeout, what arrived kept.
    const [stalled] = await attemptsOf(c.task.id);
    expect(stalled).toMatchObject({ statusCode: 200, error: null, responseHead: 'accepted' });
    expect(stalled!.durationMs).toBeLessThan(TIMEOUT_MS);
    for (const { task } of [a, b, c]) expect(await taskOf(task.id)).toMatchObject({ callbackState: 'delivered' });
  });

  it('delivers a failed task and an output whose file is gone: no output, or no download link', async () => {
    const failedHook = hook();
    const { id } = await makeTask(ctx.db, {
      model: 'sim/video-1',
      operation: 'text-to-video',
      input: { prompt: 'waves', duration_seconds: 4 },
      amount: 200_000n,
      callbackUrl: failedHook.url,
    });
    const ended = await taskRepository.finish(ctx.db, id, {
      status: 'failed',
      failure: { code: 'upstream_error', message: 'The provider failed.' },
    });
    expect(ended).toMatchObject({ upstreamId: null, callback: true });
    // The row as it now is, as a read gives it: callers render it without reading it again.
    expect(ended).toEqual({ ...(await taskOf(id)), callback: true });
    expect(ended).toMatchObject({ status: 'failed', callbackState: 'pending', errorCode: 'upstream_error' });
    await run(id, 1);
    const failedBody = JSON.parse(arrivalsAt(failedHook.path)[0]!.body.toString('utf8'));
    expect(failedBody).toMatchObject({
      task_id: id,
      status: 'failed',
      output: null,
      error: { code: 'upstream_error', message: 'The provider failed.' },
      cost: { amount: 0 },
    });

    const goneHook = hook();
    const { task, fileId } = await completedTask(goneHook.url);
    await ctx.db.file.delete({ where: { id: fileId! } });
    await run(task.id, 1);
    const goneBody = JSON.parse(arrivalsAt(goneHook.path)[0]!.body.toString('utf8'));
    expect(goneBody.output).toMatchObject({ url: expect.stringContaining(fileId!), archive_status: 'archived' });
    expect(goneBody.output).not.toHaveProperty('download_url');

    const unarchivedHook = hook();
    const { task: unarchived } = await completedTask(unarchivedHook.url, { archived: false });
    await run(unarchived.id, 1);
    const unarchivedBody = JSON.parse(arrivalsAt(unarchivedHook.path)[0]!.body.toString('utf8'));
    expect(unarchivedBody.output).toEqual({
      url: 'https://provider.example/out/1.png',
      width: 512,
      height: 512,
      content_type: 'image/png',
      archive_status: 'failed',
    });
  });
});
