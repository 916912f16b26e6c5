// The built dispatcher as a real process: it trusts extra CAs through NODE_EXTRA_CA_CERTS only (as in production, no
// client option), logs its attempts, and shuts down cleanly on SIGTERM, its next attempt left in the queue for the
// next process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallbackDeliver } from '@gensvc/contracts';
import { callbackRepository, taskRepository } from '@gensvc/db';
import { createQueues, enqueue, type Queues } from '@gensvc/queue';
import {
  eventually,
  makeTask,
  spawnService,
  startTlsServer,
  useTestContext,
  waitForOutput,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import { deliveryIdFor, newCallbackSecret, verifyCallback } from '@gensvc/webhooks';

const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  CALLBACK_RETRY_SCHEDULE: '0,300ms,1s,1s,1s',
  LOG_LEVEL: 'info',
});

let receiver: TlsTestServer;
const received: { headers: Record<string, string | string[] | undefined>; body: Buffer }[] = [];
let queues: Queues;
let dir: string;
/** Every process started, stopped after the test if it failed before stopping them itself. */
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  receiver = await startTlsServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end('ok');
    });
  });
  dir = mkdtempSync(join(tmpdir(), 'dispatcher-ca-'));
  writeFileSync(join(dir, 'ca.pem'), receiver.caPem);
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
});
afterAll(async () => {
  await Promise.all(procs.filter((p) => p.child.exitCode === null).map((p) => p.stop('SIGKILL')));
  await queues.close();
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const proc = spawnService('callback-dispatcher', env);
  procs.push(proc);
  await waitForOutput(proc, 'callback dispatcher started');
  return proc;
}

it('delivers through NODE_EXTRA_CA_CERTS only, and exits 0 on SIGTERM', async () => {
  const { id, workspaceId } = await makeTask(ctx.db, { callbackUrl: `${receiver.url}/hook` });
  expect(await taskRepository.finish(ctx.db, id, { status: 'canceled' })).toMatchObject({
    status: 'canceled',
    callback: true,
  });

  // Without the test CA the receiver's certificate is not trusted: attempt 1 fails and attempt 2 is scheduled.
  const untrusting = await start(ctx.env);
  await enqueue(queues, CallbackDeliver, { taskId: id, attempt: 1 });
  const [first] = await eventually(
    async () => {
      const rows = await callbackRepository.attempts(ctx.db, id);
      return rows.length > 0 && rows;
    },
    'attempt 1 recorded',
    10_000,
  );
  expect(first).toMatchObject({ attempt: 1, statusCode: null, error: expect.stringMatching(/^unreachable: /) });
  await eventually(() => untrusting.output().includes('"msg":"callback: attempt"'), 'the attempt logged');
  expect(await untrusting.stop()).toBe(0);
  expect(received).toHaveLength(0);

  // The next process picks attempt 2 up from the queue and trusts the CA through the environment.
  const trusting = await start({ ...ctx.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') });
  await eventually(
    async () => (await ctx.db.task.findUniqueOrThrow({ where: { id } })).callbackState === 'delivered',
    'the delivery',
    10_000,
  );
  expect(received).toHaveLength(1);
  const secret = (await callbackRepository.secret(ctx.db, ctx.secrets, workspaceId, newCallbackSecret)).secret;
  expect(verifyCallback(received[0]!.body, received[0]!.headers, [secret]).deliveryId).toBe(deliveryIdFor(id, 2));
  expect(JSON.parse(received[0]!.body.toString('utf8'))).toMatchObject({
    task_id: id,
    status: 'canceled',
    output: null,
  });

  expect(await trusting.stop()).toBe(0);
  expect(trusting.output()).toContain('shutdown phase done');
}, 90_000);
