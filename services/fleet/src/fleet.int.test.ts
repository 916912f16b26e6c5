// `npm start` end to end, on embedded stores in a scratch data directory: a printed key whose printed curl works,
// mail that reaches the printed local inbox, a clean stop on Ctrl-C (SIGINT to the whole process group, as a terminal
// sends it), and data that survives a restart (fleet-under-test runs it).
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gensvc/local-stack';
import { newId, openChannel, secretAad } from '@gensvc/db';
import {
  createTestCa,
  eventually,
  jsonOf,
  mailTo,
  makeWorkspace,
  startTlsServer,
  useTestContext,
} from '@gensvc/testing';
import { runCurl, startFleet as startFleetIn, storesOf } from './fleet-under-test';

const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const ctx = useTestContext();

const startFleet = (port: number, env: Record<string, string> = {}, dir = dataDir) => startFleetIn(port, env, dir);

/** Asks the fleet's dashboard for a password-reset mail to `email`, as the sign-in page does. */
async function askForReset(port: number, email: string) {
  const base = `http://127.0.0.1:${port}`;
  const page = await fetch(`${base}/api/v1/dashboard/session`);
  const csrf = /gsvc_csrf=([^;]+)/.exec(page.headers.getSetCookie().join('\n'))![1]!;
  const res = await fetch(`${base}/api/v1/dashboard/password-reset`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: `gsvc_csrf=${csrf}`, 'x-csrf-token': csrf, origin: base },
    body: JSON.stringify({ email }),
  });
  expect(res.status).toBe(202);
}

/** The messages to `to` in the inbox at `inbox` (the fleet's own local SMTP server's). */
const inboxFor = async (inbox: string, to: string) =>
  (await jsonOf(await fetch(`${inbox}api/messages?to=${encodeURIComponent(to)}`))).data as { subject: string }[];

it('prints a working key and curl, stops cleanly on Ctrl-C, and keeps its data for the next start', async () => {
  const port = await freePort();
  const first = startFleet(port);
  const { key, evaluate, curl } = await first.printed;
  expect(curl).toContain(`http://localhost:${port}/api/v1/me/balance`);
  // The first request is an evaluation, answered by the seeded sim channel through the queue and the worker.
  const answer = runCurl(evaluate);
  expect(answer).toMatchObject({
    model: 'sim/eval-1',
    answers: { true: { type: 'boolean' } },
    cost: { currency: 'USD' },
  });
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
  // The printed API reference and its document are served.
  expect(first.output()).toContain(`API reference http://localhost:${port}/docs`);
  const docs = await fetch(`http://127.0.0.1:${port}/docs`);
  expect([docs.status, docs.headers.get('content-type')]).toEqual([200, expect.stringContaining('text/html')]);
  expect((await jsonOf(await fetch(`http://127.0.0.1:${port}/openapi.json`))).openapi).toMatch(/^3\.1/);
  // The printed task request: a sim image generated through the provider protocol, archived over HTTPS into S3.
  const task = runCurl((await first.printed).task);
  expect(task).toMatchObject({ object: 'task', status: 'queued', model: 'sim/image-1' });
  const done = await eventually(
    async () => {
      const got = await jsonOf(
        await fetch(`http://127.0.0.1:${port}/api/v1/tasks/${task.task_id}`, {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      return got.status === 'completed' || got.status === 'failed' ? got : null;
    },
    'the printed task to finish',
    30_000,
  );
  expect(done).toMatchObject({ status: 'completed', output: { archive_status: 'archived' } });
  const image = await fetch(done.output.download_url);
  expect(image.headers.get('content-type')).toBe('image/png');
  expect(existsSync(join(dataDir, 'stack.json'))).toBe(true);
  // Mail goes to the local SMTP server whose inbox is printed: a password reset for the demo owner arrives there.
  const inbox = /mail inbox (http:\/\/127\.0\.0\.1:\d+\/)/.exec(first.output())?.[1];
  const demo = /sign in as (\S+) \//.exec(first.output())?.[1];
  expect({ inbox, demo }).toEqual({ inbox: expect.any(String), demo: expect.any(String) });
  await askForReset(port, demo!);
  await eventually(
    async () => (await inboxFor(inbox!, demo!)).some((m) => m.subject === 'Set a new gensvc password'),
    'the reset mail in the local inbox',
    30_000,
  );
  const listing = await fetch(inbox!);
  expect([listing.status, await listing.text()]).toEqual([200, expect.stringContaining('Set a new gensvc password')]);

  first.ctrlC();
  expect(await first.exited).toBe(0);
  expect(first.output()).toContain('stopped; data kept');
  expect(existsSync(join(dataDir, 'stack.json'))).toBe(false);
  expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

  const second = startFleet(port);
  const again = await second.printed;
  expect(again.key).toBe(key);
  // The inbox is kept with the rest of the data.
  const inboxAgain = /mail inbox (http:\/\/127\.0\.0\.1:\d+\/)/.exec(second.output())![1]!;
  expect((await inboxFor(inboxAgain, demo!)).map((m) => m.subject)).toContain('Set a new gensvc password');
  expect(runCurl(again.curl).workspace_id).toBe(balance.workspace_id);
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/me/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect((await jsonOf(res)).workspace_id).toBe(balance.workspace_id);
  second.ctrlC();
  expect(await second.exited).toBe(0);
}, 90_000);

it('uses the stores the variables name instead of embedded ones, sealing their plaintext secrets', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-ext-'));
  const stores = storesOf(ctx);
  // Rows stored before secrets were sealed: the start seals them under the first ENCRYPTION_KEYS key.
  const legacy = await ctx.db.channel.create({
    data: { id: newId('ch'), name: 'legacy', kind: 'openai', baseUrl: 'https://x.test', secret: 'sk-legacy-plain' },
  });
  const ws = await makeWorkspace(ctx.db);
  await ctx.db.callbackSecret.create({ data: { workspaceId: ws.id, secret: 'whsec_legacy-plaintext' } });
  try {
    const fleet = startFleet(await freePort(), stores, dir);
    const { key, curl } = await fleet.printed;
    expect(fleet.output()).toContain('channel credentials: 1 sealed');
    expect(fleet.output()).toContain('callback secrets: 1 sealed');
    const channel = await ctx.db.channel.findUniqueOrThrow({ where: { id: legacy.id } });
    expect(channel.secret).toMatch(new RegExp(`^v1:${ctx.secrets.currentKeyId}:`));
    expect(openChannel(ctx.secrets, channel).secret).toBe('sk-legacy-plain');
    const callback = await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: ws.id } });
    expect(callback.secret).not.toContain('legacy-plaintext');
    expect(ctx.secrets.open(callback.secret, secretAad('callback-secret', ws.id))).toBe('whsec_legacy-plaintext');
    const balance = runCurl(curl);
    expect(balance.amount).toBe(10);
    expect(await ctx.db.channel.count({ where: { name: { startsWith: 'sim-' } } })).toBe(6);
    expect(await ctx.db.workspace.findUnique({ where: { id: balance.workspace_id } })).not.toBeNull();
    expect(existsSync(join(dir, 'pg'))).toBe(false);
    expect(existsSync(join(dir, 'redis'))).toBe(false);
    expect(existsSync(join(dir, 's3'))).toBe(false);
    expect(key).toMatch(/^gsk_/);
    // The user's SMTP_URL is used as it is: no local server, and mail reaches theirs (the test's).
    expect(fleet.output()).toContain('mail       sent through your SMTP_URL');
    expect(fleet.output()).not.toContain('mail inbox');
    expect(existsSync(join(dir, 'mail'))).toBe(false);
    const demo = /sign in as (\S+) \//.exec(fleet.output())![1]!;
    const before = (await mailTo(demo)).length;
    await askForReset(Number(new URL(curl.match(/http:\/\/localhost:(\d+)/)![0]).port), demo);
    await eventually(async () => (await mailTo(demo)).length > before, 'the mail at the given SMTP server', 30_000);
    fleet.ctrlC();
    expect(await fleet.exited).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

it("keeps the user's NODE_EXTRA_CA_CERTS: a callback reaches a receiver on a CA the fleet did not make", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-ca-'));
  // The user's own private CA and an HTTPS receiver on it, as someone testing their webhook locally would run.
  const theirCa = createTestCa('their own CA');
  const caFile = join(dir, 'their-ca.pem');
  writeFileSync(caFile, theirCa.certPem);
  const receiver = await startTlsServer(
    (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    },
    { cert: theirCa.issue(['127.0.0.1', 'localhost']) },
  );
  const stores = storesOf(ctx);
  const port = await freePort();
  const fleet = startFleet(port, { ...stores, NODE_EXTRA_CA_CERTS: caFile }, dir);
  try {
    const { key } = await fleet.printed;
    // Theirs first, then the fleet's CA (which the archiver needs for the sim's HTTPS outputs).
    const bundle = readFileSync(join(dir, 'tls', 'ca-bundle.pem'), 'utf8');
    expect(bundle.startsWith(theirCa.certPem.trimEnd())).toBe(true);
    expect(bundle).toContain(readFileSync(join(dir, 'tls', 'ca.pem'), 'utf8'));
    const created = await fetch(`http://127.0.0.1:${port}/api/v1/sim/text-to-image`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/image-1',
        prompt: 'a lighthouse',
        size: '512x512',
        callback_url: `${receiver.url}/hook`,
      }),
    });
    // The edge's TLS check of callback_url at creation trusts their CA...
    const task = await jsonOf(created);
    expect(created.status).toBe(202);
    // ...and so does the dispatcher; the archiver still trusts the fleet's CA (the output is archived).
    const delivered = await eventually(
      () => receiver.requests.find((r) => r.method === 'POST' && r.url === '/hook') ?? null,
      'the callback at the receiver',
      30_000,
    );
    expect(delivered.headers['svc-task-id']).toBe(task.task_id);
    const done = await jsonOf(
      await fetch(`http://127.0.0.1:${port}/api/v1/tasks/${task.task_id}`, {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    expect(done).toMatchObject({ status: 'completed', output: { archive_status: 'archived' } });
    const attempts = await eventually(async () => {
      const rows = await ctx.db.callbackAttempt.findMany({ where: { taskId: task.task_id } });
      return rows.length ? rows : null;
    }, 'the attempt logged');
    expect(attempts.map((a) => [a.statusCode, a.error])).toEqual([[200, null]]);
  } finally {
    fleet.ctrlC();
    await fleet.exited;
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

it('stops with a clear message when NODE_EXTRA_CA_CERTS cannot be read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-fleet-ca-bad-'));
  try {
    const fleet = startFleet(
      await freePort(),
      {
        DATABASE_URL: ctx.env.DATABASE_URL!,
        REDIS_URL: ctx.env.REDIS_URL!,
        S3_ENDPOINT: ctx.env.S3_ENDPOINT!,
        NODE_EXTRA_CA_CERTS: join(dir, 'missing.pem'),
      },
      dir,
    );
    fleet.printed.catch(() => {}); // it never prints a key: the exit is what is checked
    expect(await fleet.exited).toBe(1);
    expect(fleet.output()).toContain(
      `NODE_EXTRA_CA_CERTS names ${join(dir, 'missing.pem')}, which cannot be read (ENOENT)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

// As root, embedded Postgres runs as the user "postgres", which cannot enter a private (0700) directory; the start
// stops at once with one sentence saying why and what to do, instead of `spawn …/initdb EACCES`. Only root meets it.
(process.getuid?.() === 0 ? it : it.skip)(
  'stops with one clear sentence when, as root, the data is under a 0700 directory',
  async () => {
    const home = mkdtempSync(join(tmpdir(), 'gensvc-private-')); // mkdtemp makes it 0700, like /root
    expect(statSync(home).mode & 0o777).toBe(0o700);
    try {
      const fleet = startFleet(
        await freePort(),
        { REDIS_URL: ctx.env.REDIS_URL!, S3_ENDPOINT: ctx.env.S3_ENDPOINT! },
        join(home, '.data'),
      );
      fleet.printed.catch(() => {}); // it never prints a key: the exit is what is checked
      expect(await fleet.exited).toBe(1);
      const said = fleet
        .output()
        .split('\n')
        .filter((l) => l.startsWith('[gensvc] could not start:'));
      expect(said).toEqual([
        `[gensvc] could not start: As root, the embedded Postgres runs as the user "postgres", which cannot enter ` +
          `${home} (mode 0700) to reach its data directory: ` +
          'run npm start as a regular user, or put the checkout (or GENSVC_DATA_DIR) under a directory others can ' +
          'enter ' +
          `(chmod o+x ${home}, or e.g. /opt or /srv), or set DATABASE_URL to a Postgres of your own.`,
      ]);
      expect(fleet.output()).not.toContain('EACCES');
      expect(existsSync(join(home, '.data', 'pg', 'PG_VERSION'))).toBe(false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  },
  30_000,
);
