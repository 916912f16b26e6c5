// `npm start` end to end, on embedded stores in a scratch data directory: a printed key whose printed curl works,
// a clean stop on Ctrl-C (SIGINT to the whole process group, as a terminal sends it), and data that survives a
// restart. The jest process group must not receive the signal, so the fleet runs as its own group leader.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gensvc/local-stack';
import { REPO_ROOT, eventually, jsonOf, useTestContext } from '@gensvc/testing';

const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const ctx = useTestContext();

function startFleet(port: number, stores: Record<string, string> = {}, dir = dataDir) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', GENSVC_DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'warn', ...stores };
  const child = spawn(process.execPath, [join(REPO_ROOT, 'services', 'fleet', 'dist', 'main.js')], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const printed = new Promise<{ key: string; evaluate: string; curl: string; task: string }>((resolve, reject) => {
    const timer = setInterval(() => {
      const curls = printedCurls(out);
      const key = /API key\s+(gsk_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      const evaluate = curls.find((c) => c.includes('/api/v1/evaluate'));
      const curl = curls.find((c) => c.includes('/api/v1/me/balance'));
      const task = curls.find((c) => c.includes('/api/v1/sim/text-to-image'));
      if (evaluate && curl && task && key) {
        clearInterval(timer);
        resolve({ key, evaluate, curl, task });
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`fleet exited ${child.exitCode}:\n${out}`));
      }
    }, 50);
  });
  // As a terminal's Ctrl-C under `npm start`: the whole group gets SIGINT, and scripts/start.mjs forwards another.
  const ctrlC = () => {
    process.kill(-child.pid!, 'SIGINT');
    process.kill(child.pid!, 'SIGINT');
  };
  return { child, printed, exited, ctrlC, output: () => out };
}

/** The commands printed under "First request:", continuation lines joined as a shell would. */
function printedCurls(out: string): string[] {
  const block = /First request:\n((?: {2}.*\n)+)/.exec(out)?.[1];
  if (!block) return [];
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .map((l) => l.replace(/\s+#.*$/, ''))
    .filter((l) => l.startsWith('curl '));
}

/** Runs the printed curl command itself (it must work as printed). */
const runCurl = (curl: string) => JSON.parse(execFileSync('sh', ['-c', curl], { encoding: 'utf8' }));

it('prints a working key and curl, stops cleanly on Ctrl-C, and keeps its data for the next start', async () => {
  const port = await freePort();
  const first = startFleet(port);
  const { key, evaluate, curl } = await first.printed;
  expect(curl).toContain(`http://localhost:${port}/api/v1/me/balance`);
  // The first request is an evaluation, answered by the seeded sim channel through the queue and the worker.
  const answer = runCurl(evaluate);
  expect(answer).toMatchObject({ model: 'sim/eval-1', answers: { true: { type: 'boolean' } }, cost: { currency: 'USD' } });
  expect(answer.cost.amount).toBeGreaterThan(0);
  const balance = runCurl(curl);
  expect(balance).toMatchObject({ object: 'balance', currency: 'USD', key: { spend_cap: null } });
  expect(balance.amount).toBeCloseTo(10 - answer.cost.amount, 6);
  expect(balance.key.spent).toBeCloseTo(answer.cost.amount, 6);
  const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim/chat-1', messages: [{ role: 'user', content: 'hello' }] }),
  });
  expect(chat.status).toBe(200);
  expect((await jsonOf(chat)).choices[0].message.content).toMatch(/^sim reply/);
  // The printed task request: a sim image generated through the provider protocol, archived over HTTPS into S3.
  const task = runCurl((await first.printed).task);
  expect(task).toMatchObject({ object: 'task', status: 'queued', model: 'sim/image-1' });
  const done = await eventually(
    async () => {
      const got = await jsonOf(await fetch(`http://127.0.0.1:${port}/api/v1/tasks/${task.task_id}`, { headers: { authorization: `Bearer ${key}` } }));
      return got.status === 'completed' || got.status === 'failed' ? got : null;
    },
    'the printed task to finish',
    30_000,
  );
  expect(done).toMatchObject({ status: 'completed', output: { archive_status: 'archived' } });
  const image = await fetch(done.output.download_url);
  expect(image.headers.get('content-type')).toBe('image/png');
  expect(existsSync(join(dataDir, 'stack.json'))).toBe(true);

  first.ctrlC();
  expect(await first.exited).toBe(0);
  expect(first.output()).toContain('stopped; data kept');
  expect(existsSync(join(dataDir, 'stack.json'))).toBe(false);
  expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

  const second = startFleet(port);
  const again = await second.printed;
  expect(again.key).toBe(key);
  expect(runCurl(again.curl).workspace_id).toBe(balance.workspace_id);
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/me/balance`, { headers: { authorization: `Bearer ${key}` } });
  expect((await jsonOf(res)).workspace_id).toBe(balance.workspace_id);
  second.ctrlC();
  expect(await second.exited).toBe(0);
}, 90_000);

it('uses the stores the variables name instead of embedded ones', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-ext-'));
  const { DATABASE_URL, REDIS_URL, S3_ENDPOINT, S3_BUCKET, S3_FORCE_PATH_STYLE, S3_ACCESS_KEY_ID = '', S3_SECRET_ACCESS_KEY = '' } = ctx.env;
  const stores = { DATABASE_URL, REDIS_URL, S3_ENDPOINT, S3_BUCKET, S3_FORCE_PATH_STYLE, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY } as Record<string, string>;
  try {
    const fleet = startFleet(await freePort(), stores, dir);
    const { key, curl } = await fleet.printed;
    const balance = runCurl(curl);
    expect(balance.amount).toBe(10);
    expect(await ctx.db.channel.count({ where: { name: { startsWith: 'sim-' } } })).toBe(6);
    expect(await ctx.db.workspace.findUnique({ where: { id: balance.workspace_id } })).not.toBeNull();
    expect(existsSync(join(dir, 'pg'))).toBe(false);
    expect(existsSync(join(dir, 'redis'))).toBe(false);
    expect(existsSync(join(dir, 's3'))).toBe(false);
    expect(key).toMatch(/^gsk_/);
    fleet.ctrlC();
    expect(await fleet.exited).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
