// The built archiver as a real process: it trusts extra CAs through NODE_EXTRA_CA_CERTS (as in production, no
// client option), registers its maintenance schedules, archives a job, and shuts down cleanly on SIGTERM.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { ArchiveOutput } from '@gensvc/contracts';
import { newId } from '@gensvc/db';
import { createQueueEvents, createQueues, enqueue, type Queues } from '@gensvc/queue';
import {
  makeWorkspace,
  spawnService,
  startTlsServer,
  useTestContext,
  waitForOutput,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import type { QueueEvents } from 'bullmq';
import { RELEASE_EXPIRED_SCHEDULER_ID, RETENTION_SWEEP_SCHEDULER_ID } from './maintenance-schedule';

const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32', LOG_LEVEL: 'info' });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let provider: TlsTestServer;
let queues: Queues;
let events: QueueEvents;
let dir: string;
/** Every process started, killed after the test if it failed before stopping them itself. */
const procs: ServiceProcess[] = [];
const image = Buffer.concat([Buffer.from('GIF89a', 'latin1'), randomBytes(200_000)]);

beforeAll(async () => {
  provider = await startTlsServer((_req, res) => res.end(image));
  dir = mkdtempSync(join(tmpdir(), 'archiver-ca-'));
  writeFileSync(join(dir, 'ca.pem'), provider.caPem);
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  events = createQueueEvents({ queue: 'archive', connection: ctx.redis, prefix: ctx.config.queuePrefix });
  await events.waitUntilReady();
});
afterAll(async () => {
  await Promise.all(procs.filter((p) => p.child.exitCode === null).map((p) => p.stop('SIGKILL')));
  await events.close();
  await queues.close();
  await provider.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const proc = spawnService('archiver', env);
  procs.push(proc);
  await waitForOutput(proc, 'archiver started');
  return proc;
}

async function archive(taskId: string, outputIndex: number) {
  const job = await enqueue(queues, ArchiveOutput, { taskId, outputIndex });
  return job.waitUntilFinished(events, 30_000);
}

it('archives through NODE_EXTRA_CA_CERTS only, schedules the maintenance jobs, and exits 0 on SIGTERM', async () => {
  const ws = await makeWorkspace(ctx.db);
  const url = `${provider.url}/image.gif`;
  const task = await ctx.db.task.create({
    data: {
      id: newId('tsk'),
      workspaceId: ws.id,
      model: 'sim/gen',
      operation: 'text-to-image',
      status: 'completed',
      input: {},
      output: {
        outputs: [
          { kind: 'image', url },
          { kind: 'image', url },
        ],
      },
    },
  });

  // Without the test CA the provider's certificate is not trusted: the output is not archived.
  const untrusting = await start(ctx.env);
  expect(await archive(task.id, 0)).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/^tls: /) });
  expect(await untrusting.stop()).toBe(0);

  const trusting = await start({ ...ctx.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') });
  const outcome = (await archive(task.id, 1)) as { outcome: string; fileId: string };
  expect(outcome).toMatchObject({ outcome: 'archived', bytes: image.length });
  const file = await ctx.db.file.findUniqueOrThrow({ where: { id: outcome.fileId } });
  expect(file).toMatchObject({ contentType: 'image/gif', outputIndex: 1, sha256: sha256(image) });
  const object = await ctx.s3.send(new GetObjectCommand({ Bucket: ctx.config.s3.bucket, Key: file.storageKey }));
  const hash = createHash('sha256');
  for await (const chunk of object.Body as Readable) hash.update(chunk as Buffer);
  expect(hash.digest('hex')).toBe(sha256(image));

  const schedulers = await queues.get('maintenance').getJobSchedulers();
  expect(schedulers.map((s) => s.key).sort()).toEqual(
    [RELEASE_EXPIRED_SCHEDULER_ID, RETENTION_SWEEP_SCHEDULER_ID].sort(),
  );

  expect(await trusting.stop()).toBe(0);
  expect(trusting.output()).toContain('shutdown phase done');
}, 90_000);
