// archive.output in-process, with a real worker on a real queue, real Postgres and S3, and a real HTTPS "provider"
// on 127.0.0.1 (let through by OUTBOUND_ALLOW_CIDRS, its certificate from the test CA handed to the client).
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ArchiveOutput, type TaskOutputEntry } from '@gensvc/contracts';
import { encodePng } from '@gensvc/media';
import { newId, type Tier } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { closeWorkers, createQueueEvents, createQueues, type Queues } from '@gensvc/queue';
import { createS3, outputObjectKey } from '@gensvc/storage';
import {
  countS3Commands,
  makeWorkspace,
  objectKeys,
  sha256,
  startTlsServer,
  useTestContext,
  type S3Counter,
  type TlsTestServer,
} from '@gensvc/testing';
import type { Job, QueueEvents, Worker } from 'bullmq';
import type { Readable } from 'node:stream';
import { startArchiveWorker } from './archive-worker';
import type { ArchiverDeps } from './deps';
import type { ArchiveOutcome } from './handlers/archive-output';

const FILE_BASE_URL = 'https://files.gensvc.test';
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32', FILE_BASE_URL });
const MiB = 1024 * 1024;
const DAY = 86_400_000;

/** A real RGB PNG of noise (incompressible, so it is big). */
const makePng = (side: number): Buffer =>
  encodePng({ width: side, height: side, pixels: randomBytes(side * side * 3) });

/** Streams `total` bytes starting with `head`, honouring backpressure, hashing what it sends; chunked (no length). */
function streamGenerated(
  res: ServerResponse,
  head: Buffer,
  total: number,
  onWrite?: (sent: number) => void,
): Promise<string> {
  const hash = createHash('sha256');
  const block = randomBytes(256 * 1024);
  let sent = 0;
  let digest: string | undefined;
  const done = () => (digest ??= hash.digest('hex'));
  return new Promise((resolve) => {
    const pump = () => {
      while (sent < total) {
        let chunk = sent === 0 ? Buffer.concat([head, block.subarray(head.length)]) : block;
        // Vary the content so a repeated block cannot hide a misordered part.
        chunk = Buffer.from(chunk.subarray(0, Math.min(chunk.length, total - sent)));
        chunk.writeUInt32BE(sent >>> 0, chunk.length >= 1024 ? 512 : 0);
        hash.update(chunk);
        sent += chunk.length;
        onWrite?.(sent);
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end(() => resolve(done()));
    };
    res.on('close', () => resolve(done()));
    pump();
  });
}

const MP4_HEAD = Buffer.concat([
  Buffer.from([0, 0, 0, 0x18]),
  Buffer.from('ftypisom', 'latin1'),
  Buffer.from([0, 0, 2, 0]),
  Buffer.from('isomiso2', 'latin1'),
]);

describe('archive.output', () => {
  let provider: TlsTestServer;
  const routes = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  let s3: S3Client;
  let uploaded: S3Counter;
  let queues: Queues;
  let events: QueueEvents;
  let worker: Worker;

  beforeAll(async () => {
    provider = await startTlsServer((req, res) => {
      const route = routes.get(new URL(req.url ?? '/', 'https://x').pathname);
      if (route) return route(req, res);
      res.statusCode = 404;
      res.end('not found');
    });
    s3 = createS3(ctx.config.s3);
    uploaded = countS3Commands(s3);
    queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
    events = createQueueEvents({ queue: 'archive', connection: ctx.redis, prefix: ctx.config.queuePrefix });
    await events.waitUntilReady();
    const deps: ArchiverDeps = {
      config: ctx.config,
      db: ctx.db,
      s3,
      logger: createLogger({ service: 'archiver-test', level: 'silent' }),
      queues,
      outbound: { ca: provider.caPem },
    };
    worker = startArchiveWorker(deps, { connection: ctx.redis, prefix: ctx.config.queuePrefix }, 4);
  });

  afterAll(async () => {
    await closeWorkers([worker], 10_000);
    await events.close();
    await queues.close();
    s3.destroy();
    await provider.close();
  });

  async function makeTask(tier: Tier, outputs: Pick<TaskOutputEntry, 'kind' | 'url'>[]) {
    const ws = await makeWorkspace(ctx.db, { tier });
    return ctx.db.task.create({
      data: {
        id: newId('tsk'),
        workspaceId: ws.id,
        model: 'sim/gen',
        operation: 'text-to-image',
        status: 'completed',
        input: { prompt: 'a lighthouse' },
        output: {
          outputs: outputs.map((o, i) => ({ ...o, seed: 40 + i, archive_status: 'pending' })),
          provider_id: 'pred_1',
        },
        completedAt: new Date(),
      },
    });
  }

  /**
   * One delivery of the archive job. The contract's key makes a producer's second add a no-op, so each call adds a
   * BullMQ job of its own id here: that is how one job delivered again (a stalled lock, a retry) or three times at
   * once reaches the handler.
   */
  let deliveries = 0;
  async function archive(
    taskId: string,
    outputIndex: number,
    opts: { attempts?: number } = {},
  ): Promise<ArchiveOutcome> {
    const data = ArchiveOutput.schema.parse({ taskId, outputIndex, v: ArchiveOutput.version });
    const job = (await queues.get('archive').add(ArchiveOutput.name, data, {
      jobId: `archive-delivery-${++deliveries}`,
      attempts: opts.attempts ?? 1,
    })) as Job;
    return job.waitUntilFinished(events, 60_000);
  }

  async function entryOf(taskId: string, i: number) {
    const task = await ctx.db.task.findUniqueOrThrow({ where: { id: taskId } });
    return (task.output as { outputs: Record<string, unknown>[] }).outputs[i]!;
  }

  async function objectSha(key: string): Promise<{ sha: string; contentType: string | undefined; bytes: number }> {
    const out = await ctx.s3.send(new GetObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of out.Body as Readable) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    return { sha: hash.digest('hex'), contentType: out.ContentType, bytes };
  }

  const objectsOf = (workspaceId: string) => objectKeys(ctx.s3, ctx.config.s3.bucket, outputObjectKey(workspaceId, ''));

  it('archives an image byte-exact as a generated file, and records it in the output entry only', async () => {
    const png = makePng(300);
    routes.set('/out/image.png', (_req, res) => {
      res.setHeader('content-type', 'application/octet-stream'); // the bytes decide, not this
      res.end(png);
    });
    const url = `${provider.url}/out/image.png?token=abc`;
    const task = await makeTask('payg', [{ kind: 'image', url }]);
    const before = Date.now();

    const outcome = await archive(task.id, 0);
    expect(outcome).toMatchObject({ outcome: 'archived', bytes: png.length, already: false });

    const file = await ctx.db.file.findUniqueOrThrow({
      where: { taskId_outputIndex: { taskId: task.id, outputIndex: 0 } },
    });
    expect(file).toMatchObject({
      workspaceId: task.workspaceId,
      source: 'generated',
      purpose: 'output',
      contentType: 'image/png',
      bytes: BigInt(png.length),
      sha256: sha256(png),
      storageKey: outputObjectKey(task.workspaceId, file.id),
      archiveStatus: 'archived',
      filename: `${task.id}-0.png`,
    });
    expect(file.id).toMatch(/^file_[0-9A-Za-z]{22}$/);
    // Pay-as-you-go: public copy 90 days, library entry 30 days (the earlier of 30 d and the copy's life).
    expect(file.publicExpiresAt!.getTime() - before).toBeGreaterThanOrEqual(90 * DAY - 1000);
    expect(file.publicExpiresAt!.getTime() - before).toBeLessThan(90 * DAY + 60_000);
    expect(file.expiresAt!.getTime() - file.createdAt.getTime()).toBe(30 * DAY);

    expect(await objectSha(file.storageKey)).toEqual({ sha: sha256(png), contentType: 'image/png', bytes: png.length });

    const after = await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } });
    expect(after.output).toEqual({
      outputs: [
        {
          kind: 'image',
          url,
          seed: 40,
          archive_status: 'archived',
          svc_file_id: file.id,
          svc_url: `${FILE_BASE_URL}/${ctx.config.s3.bucket}/${file.storageKey}`,
        },
      ],
      provider_id: 'pred_1',
    });
    const { output: _o, ...rest } = after;
    const { output: _p, ...restBefore } = task;
    expect(rest).toEqual(restBefore);
  });

  it('a body declared within the sniff window, a longer one, an undeclared one: one PutObject each', async () => {
    const small = makePng(64);
    const large = makePng(300);
    expect(small.length).toBeLessThan(256 * 1024);
    expect(large.length).toBeGreaterThan(256 * 1024);
    routes.set('/out/small.png', (_req, res) => res.end(small));
    routes.set('/out/large.png', (_req, res) => res.end(large));
    routes.set('/out/chunked.png', (_req, res) => {
      res.write(small.subarray(0, 100));
      setTimeout(() => res.end(small.subarray(100)), 5);
    });
    const task = await makeTask(
      'payg',
      ['small', 'large', 'chunked'].map((name) => ({ kind: 'image' as const, url: `${provider.url}/out/${name}.png` })),
    );
    const commandsBefore = uploaded.commands.length;
    const outcomes = [await archive(task.id, 0), await archive(task.id, 1), await archive(task.id, 2)];
    expect(uploaded.commands.slice(commandsBefore)).toEqual(Array(3).fill('PutObjectCommand'));
    expect(outcomes.map((o) => o.outcome === 'archived' && o.bytes)).toEqual([
      small.length,
      large.length,
      small.length,
    ]);
    for (const [i, bytes] of [small, large, small].entries()) {
      const file = await ctx.db.file.findUniqueOrThrow({
        where: { taskId_outputIndex: { taskId: task.id, outputIndex: i } },
      });
      expect(file).toMatchObject({ contentType: 'image/png', bytes: BigInt(bytes.length), sha256: sha256(bytes) });
      expect(await objectSha(file.storageKey)).toEqual({
        sha: sha256(bytes),
        contentType: 'image/png',
        bytes: bytes.length,
      });
    }
  });

  it('a body declared within the sniff window but cut short fails as a cut stream; nothing stored', async () => {
    routes.set('/out/cut.png', (_req, res) => {
      res.writeHead(200, { 'content-length': '4000' });
      res.write(makePng(8));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const url = `${provider.url}/out/cut.png`;
    const task = await makeTask('payg', [{ kind: 'image', url }]);
    const commandsBefore = uploaded.commands.length;
    expect(await archive(task.id, 0)).toMatchObject({
      outcome: 'failed',
      reason: expect.stringMatching(/^connection: /),
    });
    // Nothing was put; the failed job's clean-up deletes the key all the same.
    expect(uploaded.commands.slice(commandsBefore).filter((c) => c !== 'DeleteObjectCommand')).toEqual([]);
    expect(await objectsOf(task.workspaceId)).toEqual([]);
    expect(await entryOf(task.id, 0)).toEqual({ kind: 'image', url, seed: 40, archive_status: 'failed' });
  });

  it('a re-run, or the same job delivered three times at once, leaves one row and one object', async () => {
    const png = makePng(64);
    routes.set('/out/again.png', (_req, res) => res.end(png));
    const task = await makeTask('team', [{ kind: 'image', url: `${provider.url}/out/again.png` }]);
    const outcomes = await Promise.all([archive(task.id, 0), archive(task.id, 0), archive(task.id, 0)]);
    expect(outcomes.map((o) => o.outcome)).toEqual(['archived', 'archived', 'archived']);
    const fileIds = new Set(outcomes.map((o) => (o as { fileId: string }).fileId));
    expect(fileIds.size).toBe(1);
    const rerun = await archive(task.id, 0);
    expect(rerun).toMatchObject({ outcome: 'archived', already: true, fileId: [...fileIds][0] });

    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(1);
    const keys = await objectsOf(task.workspaceId);
    expect(keys).toHaveLength(1);
    expect((await objectSha(keys[0]!)).sha).toBe(sha256(png));
    expect(await entryOf(task.id, 0)).toMatchObject({ archive_status: 'archived', svc_file_id: [...fileIds][0] });
  });

  it("archives a free workspace's output; the row lives by the workspace's retention", async () => {
    const png = makePng(48);
    routes.set('/out/free.png', (_req, res) => res.end(png));
    const url = `${provider.url}/out/free.png`;
    const task = await makeTask('free', [{ kind: 'image', url }]);
    const before = Date.now();
    const outcome = await archive(task.id, 0);
    expect(outcome).toMatchObject({ outcome: 'archived', bytes: png.length, already: false });
    const file = await ctx.db.file.findUniqueOrThrow({
      where: { taskId_outputIndex: { taskId: task.id, outputIndex: 0 } },
    });
    expect(file).toMatchObject({ workspaceId: task.workspaceId, sha256: sha256(png), bytes: BigInt(png.length) });
    // Free: the public copy 7 days, and the library entry with it.
    expect(file.publicExpiresAt!.getTime() - before).toBeGreaterThanOrEqual(7 * DAY - 1000);
    expect(file.publicExpiresAt!.getTime() - before).toBeLessThan(7 * DAY + 60_000);
    expect(await entryOf(task.id, 0)).toMatchObject({ archive_status: 'archived', svc_file_id: file.id });
  });

  it("an output archived by an earlier run whose URL now fails: that run's row and object stay", async () => {
    const png = makePng(40);
    let serve = true;
    routes.set('/out/expires.png', (_req, res) => {
      if (serve) return void res.end(png);
      res.statusCode = 404;
      res.end('gone');
    });
    const url = `${provider.url}/out/expires.png`;
    const task = await makeTask('payg', [{ kind: 'image', url }]);
    const first = await archive(task.id, 0);
    expect(first).toMatchObject({ outcome: 'archived', already: false });
    serve = false;
    const again = await archive(task.id, 0);
    expect(again).toMatchObject({ outcome: 'archived', already: true, fileId: (first as { fileId: string }).fileId });
    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(1);
    const keys = await objectsOf(task.workspaceId);
    expect(keys).toHaveLength(1);
    expect((await objectSha(keys[0]!)).sha).toBe(sha256(png));
    expect(await entryOf(task.id, 0)).toMatchObject({ archive_status: 'archived' });
  });

  it('streams a 64 MiB video with bounded memory: never more than a few parts ahead of S3', async () => {
    const total = 64 * MiB;
    let maxLead = 0;
    let served: Promise<string> = Promise.resolve('');
    routes.set('/out/video.mp4', (_req, res) => {
      res.setHeader('content-type', 'video/mp4');
      served = streamGenerated(res, MP4_HEAD, total, (sent) => {
        maxLead = Math.max(maxLead, sent - uploaded.bytes);
      });
    });
    const task = await makeTask('free', [
      { kind: 'image', url: `${provider.url}/out/unused.png` },
      { kind: 'video', url: `${provider.url}/out/video.mp4` },
    ]);
    const start = uploaded.bytes;
    const outcome = await archive(task.id, 1);
    expect(outcome).toMatchObject({ outcome: 'archived', bytes: total });
    expect(uploaded.bytes - start).toBe(total);

    const file = await ctx.db.file.findUniqueOrThrow({
      where: { taskId_outputIndex: { taskId: task.id, outputIndex: 1 } },
    });
    const sent = await served;
    expect(file).toMatchObject({
      contentType: 'video/mp4',
      bytes: BigInt(total),
      sha256: sent,
      filename: `${task.id}-1.mp4`,
    });
    expect(await objectSha(file.storageKey)).toEqual({ sha: sent, contentType: 'video/mp4', bytes: total });
    // Held whole, the lead would reach 64 MiB. Streaming, it is bounded by the parts in flight (queueSize 2 ×
    // 5 MiB), the part being filled, and socket buffers.
    expect(maxLead).toBeLessThan(24 * MiB);
    // Free tier: the public copy lives 7 days, so the library entry does too.
    expect(file.publicExpiresAt!.getTime() - file.createdAt.getTime()).toBe(7 * DAY);
    expect(file.expiresAt!.getTime()).toBe(file.publicExpiresAt!.getTime());
    // The other output was not touched.
    expect(await entryOf(task.id, 0)).toEqual({
      kind: 'image',
      url: `${provider.url}/out/unused.png`,
      seed: 40,
      archive_status: 'pending',
    });
    expect(await entryOf(task.id, 1)).toMatchObject({ archive_status: 'archived', svc_file_id: file.id });
  }, 120_000);

  it('an image over 30 MB is too_large: upload aborted mid-way, no object, no row, task keeps its URL', async () => {
    let finished = false;
    routes.set('/out/huge.png', (_req, res) => {
      // No Content-Length: the limit is found while streaming, after several parts were uploaded.
      void streamGenerated(res, makePng(8), 40 * MiB).then(() => (finished = res.writableFinished));
    });
    const url = `${provider.url}/out/huge.png`;
    const task = await makeTask('payg', [{ kind: 'image', url }]);
    const partsBefore = uploaded.bytes;
    const commandsBefore = uploaded.commands.length;
    const outcome = await archive(task.id, 0);
    expect(outcome).toMatchObject({ outcome: 'too_large', reason: expect.stringMatching(/^too_large: /) });
    // Parts did reach S3 before the limit...
    expect(uploaded.bytes - partsBefore).toBeGreaterThan(0);
    // ...yet nothing is left: the multipart upload was aborted, never completed.
    const commands = uploaded.commands.slice(commandsBefore);
    expect(commands).toEqual(
      expect.arrayContaining(['CreateMultipartUploadCommand', 'UploadPartCommand', 'AbortMultipartUploadCommand']),
    );
    expect(commands).not.toContain('CompleteMultipartUploadCommand');
    expect(await objectsOf(task.workspaceId)).toEqual([]);
    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(0);
    expect(await entryOf(task.id, 0)).toEqual({ kind: 'image', url, seed: 40, archive_status: 'too_large' });
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).status).toBe('completed');
    expect(finished).toBe(false);
  }, 60_000);

  it('an output that cannot be fetched is failed; the task is not failed and keeps the provider URL', async () => {
    const missing = `${provider.url}/out/missing.png`;
    routes.set('/out/page.png', (_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end('<html>not an image</html>');
    });
    const task = await makeTask('payg', [
      { kind: 'image', url: missing },
      { kind: 'image', url: `${provider.url}/out/page.png` },
      { kind: 'image', url: `https://127.0.0.2:${provider.port}/out/image.png` },
      { kind: 'image', url: `http://127.0.0.1:${provider.port}/out/image.png` },
    ]);
    const seen = provider.requests.length;
    expect(await archive(task.id, 0)).toMatchObject({
      outcome: 'failed',
      reason: expect.stringContaining('http_status'),
    });
    expect(await archive(task.id, 1)).toMatchObject({
      outcome: 'failed',
      reason: expect.stringContaining('unsupported_type'),
    });
    expect(await archive(task.id, 2)).toMatchObject({
      outcome: 'failed',
      reason: expect.stringContaining('private_address'),
    });
    expect(await archive(task.id, 3)).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('scheme') });
    // Only the first two reached the provider: the private address and plain http were refused before connecting.
    expect(provider.requests.slice(seen).map((r) => r.url)).toEqual(['/out/missing.png', '/out/page.png']);
    expect(await entryOf(task.id, 0)).toEqual({ kind: 'image', url: missing, seed: 40, archive_status: 'failed' });
    expect(await ctx.db.file.count({ where: { taskId: task.id } })).toBe(0);
    expect(await objectsOf(task.workspaceId)).toEqual([]);
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).status).toBe('completed');
  });

  it('retries a transient failure while attempts remain', async () => {
    const png = makePng(32);
    let calls = 0;
    routes.set('/out/flaky.png', (_req, res) => {
      if (calls++ === 0) {
        res.statusCode = 503;
        return res.end('busy');
      }
      res.end(png);
    });
    const task = await makeTask('payg', [{ kind: 'image', url: `${provider.url}/out/flaky.png` }]);
    expect(await archive(task.id, 0, { attempts: 2 })).toMatchObject({ outcome: 'archived', bytes: png.length });
    expect(calls).toBe(2);
  });

  it('does nothing for a task that is gone or an output that does not exist', async () => {
    expect(await archive('tsk_gone', 0)).toEqual({ outcome: 'skipped', reason: 'task_gone' });
    const task = await makeTask('payg', [{ kind: 'image', url: `${provider.url}/out/x.png` }]);
    expect(await archive(task.id, 5)).toEqual({ outcome: 'skipped', reason: 'no_such_output' });
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).output).toEqual(task.output);
  });

  it('completes a running task once its last output is dealt with, and schedules its callback once', async () => {
    const png = makePng(32);
    routes.set('/out/done.png', (_req, res) => res.end(png));
    const task = await makeTask('payg', [
      { kind: 'image', url: `${provider.url}/out/done.png` },
      { kind: 'image', url: `${provider.url}/out/missing.png` },
    ]);
    await ctx.db.task.update({
      where: { id: task.id },
      data: { status: 'running', completedAt: null, callbackUrl: 'https://hooks.example/cb' },
    });

    await archive(task.id, 0);
    // One output is still pending: the task is not complete and no callback is due.
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).toMatchObject({
      status: 'running',
      callbackState: 'none',
      completedAt: null,
    });
    const callbackJob = () => queues.get('callbacks').getJob(`callback.deliver/${task.id}/1`);
    expect(await callbackJob()).toBeUndefined();

    // The second output cannot be fetched: given up on, which does not fail the task (spec §7).
    await archive(task.id, 1);
    const done = await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } });
    expect(done).toMatchObject({ status: 'completed', callbackState: 'pending' });
    expect(done.completedAt).not.toBeNull();
    expect((await callbackJob())?.data).toMatchObject({ taskId: task.id, attempt: 1 });

    // A re-run completes nothing again and adds no second callback job.
    await archive(task.id, 1);
    expect(
      (await queues.get('callbacks').getJobs(['waiting', 'delayed'])).filter((j) => j.data.taskId === task.id),
    ).toHaveLength(1);
  });
});
