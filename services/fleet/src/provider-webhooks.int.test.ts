// Provider webhooks through real processes: the task-runner asks the upstream-sim's Replicate and fal
// protocols for a webhook, the sim signs it as each provider does (Standard Webhooks HMAC; ED25519 with its JWKS)
// and POSTs it to the edge, the edge verifies it and records the result the webhook carries (no poll job is ever made,
// no provider read). Then the edge is SIGKILLed while webhooks are due: they reach nothing, and the task-runner's
// reconciler polls each task once it has waited TASK_POLL_WEBHOOK_FALLBACK, which finishes them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskPoll } from '@gensvc/contracts';
import { modelRepository } from '@gensvc/db';
import { freePort } from '@gensvc/local-stack';
import { createQueues, jobIdOf } from '@gensvc/queue';
import {
  addSimChannel,
  eventually,
  jsonOf,
  makeKey,
  makeWorkspace,
  sharedTestCa,
  spawnService,
  useTestContext,
  waitForHttp,
  type ServiceProcess,
} from '@gensvc/testing';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET, SIM_FAL_USER_ID, startSim, type Sim } from '../../upstream-sim/src/index';

const FALLBACK_MS = 12_000;
const JOB_MS = 1_500;
const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  FILE_BASE_URL: 'https://files.gensvc.test',
  TASK_POLL_SCHEDULE: '1s',
  TASK_POLL_WEBHOOK_FALLBACK: `${FALLBACK_MS}ms`,
  // The reconcilers sweep every 2 s: the fallback's poll comes within 2 s of its wait.
  RECONCILE_INTERVAL: '2s',
});

const scratch = mkdtempSync(join(tmpdir(), 'gensvc-provider-webhooks-'));
let sim: Sim;
const procs = new Map<string, ServiceProcess>();
let edgeUrl = '';
let auth: Record<string, string> = {};

beforeAll(async () => {
  const { ca, leaf } = sharedTestCa();
  const caFile = join(scratch, 'ca.pem');
  writeFileSync(caFile, ca.certPem);
  sim = await startSim({ outputs: { tls: { key: leaf.keyPem, cert: leaf.certPem } }, taskDurationMs: JOB_MS });
  const replicate = await addSimChannel(ctx.db, sim.url, { name: 'hooks-replicate', kind: 'replicate' });
  const fal = await addSimChannel(ctx.db, sim.url, { name: 'hooks-fal', kind: 'fal' });
  await modelRepository.create(ctx.db, {
    id: 'sim/hooks-replicate',
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: replicate.id, upstreamModel: 'sim/image-1' }],
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/hooks-fal',
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: fal.id, upstreamModel: 'fal-ai/flux/dev' }],
  });
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000_000n });
  auth = { authorization: `Bearer ${(await makeKey(ctx.db, ws.id)).secret}` };

  const port = await freePort();
  edgeUrl = `http://127.0.0.1:${port}`;
  const env = {
    ...ctx.env,
    NODE_EXTRA_CA_CERTS: caFile,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    PROVIDER_WEBHOOK_BASE_URL: edgeUrl,
    REPLICATE_WEBHOOK_SECRET: DEFAULT_REPLICATE_WEBHOOK_SECRET,
    FAL_WEBHOOK_JWKS_URL: sim.falJwksUrl,
    FAL_WEBHOOK_USER_ID: SIM_FAL_USER_ID,
  };
  procs.set('edge', spawnService('edge', { ...env, PORT: String(port), LOG_LEVEL: 'error' }));
  for (const name of ['task-runner', 'archiver']) procs.set(name, spawnService(name, env));
  await waitForHttp(`${edgeUrl}/readyz`, procs.get('edge')!);
}, 60_000);

afterAll(async () => {
  await Promise.all([...procs.values()].map((p) => p.stop()));
  await sim?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function create(model: string, i: number): Promise<string> {
  const res = await fetch(`${edgeUrl}/api/v1/sim/text-to-image`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: `webhook ${i}`, size: '256x256' }),
  });
  const body = await jsonOf(res);
  if (res.status !== 202) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body.task_id;
}

const tasksOf = (ids: string[]) =>
  ctx.db.task.findMany({
    where: { id: { in: ids } },
    select: { id: true, status: true, createdAt: true, completedAt: true, upstreamId: true },
  });
/**
 * The status reads of these jobs: Replicate's GET of the prediction, fal's GET of …/status (not the outputs, not fal's
 * result).
 */
const pollsOf = (upstreamIds: string[]) =>
  sim
    .requests()
    .filter(
      (r) =>
        r.method === 'GET' &&
        r.protocol !== 'outputs' &&
        upstreamIds.some((u) => r.path.includes(u)) &&
        !/\/requests\/[^/]+$/.test(r.path),
    );

it('refuses an unsigned or badly signed webhook with 401, and an unknown provider with 404', async () => {
  const post = (path: string, headers: Record<string, string>) =>
    fetch(`${edgeUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{"id":"x"}',
    });
  const unsigned = await post('/v1/provider-webhooks/replicate/task_x', {});
  expect(unsigned.status).toBe(401);
  expect((await jsonOf(unsigned)).error.code).toBe('invalid_webhook_signature');
  const now = String(Math.floor(Date.now() / 1000));
  const forged = await post('/v1/provider-webhooks/replicate/task_x', {
    'webhook-id': 'msg_1',
    'webhook-timestamp': now,
    'webhook-signature': 'v1,AAAA',
  });
  expect(forged.status).toBe(401);
  const falForged = await post('/v1/provider-webhooks/fal/task_x', {
    'x-fal-webhook-request-id': 'r',
    'x-fal-webhook-user-id': 'u',
    'x-fal-webhook-timestamp': now,
    'x-fal-webhook-signature': 'ab'.repeat(64),
  });
  expect(falForged.status).toBe(401);
  // Signed by fal's own key, but for another fal account: fal signs every account's webhooks with the same keys.
  const otherAccount = await post(
    '/v1/provider-webhooks/fal/task_x',
    sim.falWebhookHeaders('r', '{"id":"x"}', 'another-user'),
  );
  expect(otherAccount.status).toBe(401);
  expect((await jsonOf(otherAccount)).error.code).toBe('invalid_webhook_signature');
  // The same, as this account's, is verified (an unknown task is answered as done).
  expect((await post('/v1/provider-webhooks/fal/task_x', sim.falWebhookHeaders('r', '{"id":"x"}'))).status).toBe(204);
  expect((await post('/v1/provider-webhooks/openai/task_x', {})).status).toBe(404);
});

it("finishes tasks on the providers' webhooks, before the fallback poll, with no poll or provider read", async () => {
  const ids = await Promise.all(
    [0, 1, 2].flatMap((i) => [create('sim/hooks-replicate', i), create('sim/hooks-fal', i)]),
  );
  await eventually(
    async () => (await tasksOf(ids)).every((t) => t.status === 'completed'),
    'every task completed',
    FALLBACK_MS - 2_000,
  );
  const tasks = await tasksOf(ids);
  for (const t of tasks) expect(t.completedAt!.getTime() - t.createdAt.getTime()).toBeLessThan(FALLBACK_MS - 2_000);
  const upstreamIds = tasks.map((t) => t.upstreamId!);
  const hooks = sim.webhooks().filter((w) => upstreamIds.includes(w.id));
  expect(hooks.map((w) => [w.provider, w.status]).sort()).toEqual([
    ...Array(3).fill(['fal', 204]),
    ...Array(3).fill(['replicate', 204]),
  ]);
  // The webhook's body is the result (Replicate's prediction, fal's payload): recorded by the edge, so the provider
  // was never asked about these jobs (no status read, no fal result read), and no poll job was made for them (one that
  // ran would be kept, completed, for an hour).
  expect(pollsOf(upstreamIds)).toHaveLength(0);
  const falResults = sim
    .requests()
    .filter((r) => r.method === 'GET' && upstreamIds.some((u) => r.path.endsWith(`/requests/${u}`)));
  expect(falResults).toHaveLength(0);
  const queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  try {
    for (const id of ids)
      expect(await queues.get(TaskPoll.queue).getJob(jobIdOf(TaskPoll, { taskId: id, attempt: 1 }))).toBeUndefined();
  } finally {
    await queues.close();
  }
}, 60_000);

it("with the edge SIGKILLed while webhooks are due, the reconciler's fallback polls finish the tasks", async () => {
  const ids = await Promise.all(
    [0, 1].flatMap((i) => [create('sim/hooks-replicate', 10 + i), create('sim/hooks-fal', 10 + i)]),
  );
  await procs.get('edge')!.stop('SIGKILL');
  await eventually(
    async () => (await tasksOf(ids)).every((t) => t.status === 'completed'),
    'every task completed by its fallback poll',
    FALLBACK_MS + 20_000,
  );
  const tasks = await tasksOf(ids);
  const all = tasks.map((t) => t.upstreamId!);
  // Each job's webhook was sent and reached nothing.
  const hooks = sim.webhooks().filter((w) => all.includes(w.id));
  expect(hooks).toHaveLength(ids.length);
  for (const w of hooks) expect(w).toMatchObject({ status: null, error: expect.any(String) });
  // So the polls did it, once the fallback's wait had passed.
  for (const t of tasks)
    expect(t.completedAt!.getTime() - t.createdAt.getTime()).toBeGreaterThanOrEqual(FALLBACK_MS - 1_000);
}, 90_000);
