// The admin's lifecycle commands, run as the built CLI against this file's own Postgres, Redis and queue prefix:
// changes to channels and models reach every subscribed replica's Catalog within a second; the circuit-breaker
// state is shared through Redis and shown by `channel list`; the CLI never starts a local store in production and
// migrates only on `migrate`.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyPassword } from '@gensvc/auth';
import { openChannel, sessionRepository, userRepository } from '@gensvc/db';
import { createRedisConnection, SharedSubscriber } from '@gensvc/queue';
import {
  adminUrl,
  eventually,
  freePort,
  jsonOf,
  makeCustomer,
  makeTask,
  spawnService,
  useTestContext,
  waitForHttp,
  withAdmin,
  type ServiceProcess,
} from '@gensvc/testing';
import { Catalog, CircuitBreaker, shareUpstreamState, type SharedUpstreamState } from '@gensvc/upstream';
import { cliFor, runCli } from './cli-under-test';

// Each test runs the CLI a dozen times or more (a Node start, a Postgres connection, scrypt): minutes on a busy
// machine.
jest.setTimeout(120_000);

const ctx = useTestContext();
const { cli, cliJson, ok } = cliFor(ctx);
const silent = { warn: () => {} };

/** A replica's view of the catalog: a long TTL, so that only an invalidation can make it see a change in time. */
async function replica(): Promise<{ catalog: Catalog; breaker: CircuitBreaker; state: SharedUpstreamState }> {
  const catalog = new Catalog(ctx.db, ctx.secrets, { ttlMs: 60_000 });
  const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: 60_000 });
  const connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'test:subscriber' });
  const subscriber = new SharedSubscriber(connection, silent);
  const queuePrefix = ctx.env.QUEUE_PREFIX!;
  const shared = await shareUpstreamState({ redis: ctx.redis, subscriber, queuePrefix, catalog, breaker, log: silent });
  const state = {
    close: async () => {
      await shared.close();
      subscriber.close();
    },
  };
  return { catalog, breaker, state };
}

describe('production safety', () => {
  it('refuses without DATABASE_URL in production, naming the variable; starts no local store', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-admin-prod-'));
    rmSync(dataDir, { recursive: true });
    try {
      for (const json of [true, false]) {
        const run = await runCli(json ? ['workspace', 'list', '--json'] : ['workspace', 'list'], {
          NODE_ENV: 'production',
          GENSVC_DATA_DIR: dataDir,
        });
        expect(run.code).toBe(1);
        const text = json ? JSON.parse(run.stdout).error.message : run.stderr;
        expect(text).toContain('DATABASE_URL is not set and NODE_ENV is production');
        if (json) expect(JSON.parse(run.stdout).error.code).toBe('database_url_required');
      }
      // Neither started nor reused: the embedded Postgres would have made its data directory.
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('migrates only on `migrate`', async () => {
    const name = `gensvc_empty_${randomBytes(4).toString('hex')}`;
    const admin = adminUrl(ctx.env.DATABASE_URL!);
    await withAdmin(admin, (c) => c.query(`CREATE DATABASE "${name}"`));
    const url = new URL(ctx.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    const env = { ...ctx.env, DATABASE_URL: url.toString() };
    const tables = () =>
      withAdmin(
        url.toString(),
        async (c) =>
          (await c.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).rows[0].n as number,
      );
    try {
      const listed = await runCli(['workspace', 'list', '--json'], env);
      expect(listed.code).toBe(1);
      expect(await tables()).toBe(0);
      const migrated = await runCli(['migrate', '--json'], env);
      expect(migrated.code).toBe(0);
      expect(JSON.parse(migrated.stdout).applied.length).toBeGreaterThan(0);
      expect(await tables()).toBeGreaterThan(0);
      expect((await runCli(['workspace', 'list', '--json'], env)).code).toBe(0);
    } finally {
      await withAdmin(admin, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    }
  });
});

describe('channels and models', () => {
  it('updates, disables, enables and removes a channel; every replica sees each change within a second', async () => {
    const ch = await ok([
      'channel',
      'add',
      '--name',
      'life-a',
      '--kind',
      'evaluate',
      '--base-url',
      'http://127.0.0.1:9/',
      '--secret',
      's3cret-one',
    ]);
    await ok(['model', 'add', '--id', 'life/judge', '--kind', 'evaluation', '--channels', 'life-a']);
    const replicas = [await replica(), await replica()];
    try {
      for (const r of replicas) expect((await r.catalog.model('life/judge'))?.routes[0]?.channel.enabled).toBe(true);

      const started = Date.now();
      const disabled = await ok(['channel', 'disable', '--name', 'life-a']);
      expect(disabled).toMatchObject({ id: ch.id, enabled: false });
      for (const r of replicas) {
        await eventually(
          async () => (await r.catalog.model('life/judge'))?.routes[0]?.channel.enabled === false,
          'the disabled channel on a replica',
          1_000,
        );
        await eventually(
          async () => (await r.catalog.channel(ch.id))?.enabled === false,
          'the disabled channel by id',
          1_000,
        );
      }
      expect(Date.now() - started).toBeLessThan(5_000); // well within the catalog's 60 s TTL: the invalidation did it

      const updated = await ok([
        'channel',
        'update',
        '--id',
        ch.id,
        '--base-url',
        'http://127.0.0.1:10/',
        '--secret',
        's3cret-two',
        '--priority',
        '7',
        '--weight',
        '3',
        '--evaluate-path',
        '/v2/eval',
      ]);
      expect(updated).toMatchObject({
        base_url: 'http://127.0.0.1:10/',
        has_secret: true,
        priority: 7,
        weight: 3,
        evaluate_path: '/v2/eval',
        enabled: false,
      });
      expect(JSON.stringify(updated)).not.toContain('s3cret-two');
      const stored = await ctx.db.channel.findUniqueOrThrow({ where: { id: ch.id } });
      expect(stored.secret).not.toContain('s3cret-two');
      expect(openChannel(ctx.secrets, stored).secret).toBe('s3cret-two');
      await ok(['channel', 'enable', '--id', ch.id]);
      for (const r of replicas) {
        await eventually(
          async () => {
            const c = (await r.catalog.model('life/judge'))?.routes[0]?.channel;
            return c?.enabled === true && c.baseUrl === 'http://127.0.0.1:10/';
          },
          'the re-enabled, moved channel on a replica',
          1_000,
        );
      }

      // A generation task in flight on the channel keeps it.
      const task = await makeTask(ctx.db);
      await ctx.db.task.update({ where: { id: task.id }, data: { channelId: ch.id, status: 'running' } });
      const busy = await cliJson(['channel', 'remove', '--name', 'life-a']);
      expect(busy.code).toBe(1);
      expect(busy.body.error.code).toBe('channel_in_use');
      await ctx.db.task.update({ where: { id: task.id }, data: { status: 'completed' } });
      expect(await ok(['channel', 'remove', '--name', 'life-a'])).toEqual({
        id: ch.id,
        name: 'life-a',
        object: 'channel',
        deleted: true,
      });
      expect(await ctx.db.channel.findUnique({ where: { id: ch.id } })).toBeNull();
      for (const r of replicas)
        await eventually(
          async () => (await r.catalog.model('life/judge'))?.routes.length === 0,
          'the route gone on a replica',
          1_000,
        );

      expect((await cliJson(['channel', 'disable', '--name', 'life-a'])).body.error.code).toBe('channel_not_found');
    } finally {
      for (const r of replicas) await r.state.close();
    }
  });

  it('two edges refuse a disabled model, and one whose only channel is disabled, within a second', async () => {
    // A channel nobody listens on: while the model is usable a call fails upstream (502), which is not a refusal.
    await ok([
      'channel',
      'add',
      '--name',
      'life-edge',
      '--kind',
      'openai',
      '--base-url',
      `http://127.0.0.1:${await freePort()}`,
    ]);
    await ok([
      'model',
      'add',
      '--id',
      'life/chat',
      '--kind',
      'chat',
      '--input-price',
      '1',
      '--output-price',
      '1',
      '--channels',
      'life-edge',
    ]);
    const { secret } = await makeCustomer(ctx.db);
    const edges: { proc: ServiceProcess; url: string }[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const port = await freePort();
        const proc = spawnService('edge', { ...ctx.env, PORT: String(port), OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' });
        edges.push({ proc, url: `http://127.0.0.1:${port}` });
        await waitForHttp(`http://127.0.0.1:${port}/readyz`, proc);
      }
      const chat = async (url: string) => {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'life/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
        });
        return `${res.status} ${(await jsonOf(res)).error?.code}`;
      };
      // Each edge has read (and cached, for its 5 s TTL) the usable model.
      for (const e of edges) expect(await chat(e.url)).toMatch(/^502 /);
      const refusedEverywhere = (answer: string) =>
        Promise.all(
          edges.map((e) =>
            eventually(async () => (await chat(e.url)) === answer, `${answer} from ${e.url}`, 1_000, 50),
          ),
        );

      await ok(['model', 'update', '--id', 'life/chat', '--enabled', 'false']);
      await refusedEverywhere('404 model_not_found');
      await ok(['model', 'update', '--id', 'life/chat', '--enabled', 'true']);
      await Promise.all(
        edges.map((e) => eventually(async () => /^502 /.test(await chat(e.url)), 'usable again', 1_000, 50)),
      );

      await ok(['channel', 'disable', '--name', 'life-edge']);
      await refusedEverywhere('503 no_channel_available');
    } finally {
      await Promise.all(edges.map((e) => e.proc.stop()));
    }
  });

  it('updates a model (prices, channels, enabled), removes it; replicas refuse it disabled within 1 s', async () => {
    await ok(['channel', 'add', '--name', 'life-m1', '--kind', 'replicate', '--base-url', 'http://127.0.0.1:9/']);
    await ok(['channel', 'add', '--name', 'life-m2', '--kind', 'fal', '--base-url', 'http://127.0.0.1:9/']);
    await ok([
      'model',
      'add',
      '--id',
      'life/image',
      '--kind',
      'image',
      '--unit-price',
      '0.04',
      '--channels',
      'life-m1',
    ]);
    const replicas = [await replica(), await replica()];
    try {
      for (const r of replicas) expect((await r.catalog.model('life/image'))?.enabled).toBe(true);
      const off = await ok([
        'model',
        'update',
        '--id',
        'life/image',
        '--enabled',
        'false',
        '--unit-price',
        '0.05',
        '--channels',
        'life-m2,life-m1',
      ]);
      expect(off).toMatchObject({ id: 'life/image', enabled: false, unit_price: 0.05 });
      expect(off.channels.sort()).toEqual(['life-m1', 'life-m2']);
      for (const r of replicas)
        await eventually(
          async () => (await r.catalog.model('life/image'))?.enabled === false,
          'the disabled model on a replica',
          1_000,
        );
      const narrowed = await ok([
        'model',
        'update',
        '--id',
        'life/image',
        '--channels',
        'life-m2',
        '--enabled',
        'true',
      ]);
      expect(narrowed).toMatchObject({ enabled: true, channels: ['life-m2'] });

      const task = await makeTask(ctx.db, { model: 'life/image' });
      const busy = await cliJson(['model', 'remove', '--id', 'life/image']);
      expect(busy.body.error.code).toBe('model_in_use');
      await ctx.db.task.update({ where: { id: task.id }, data: { status: 'canceled' } });
      expect(await ok(['model', 'remove', '--id', 'life/image'])).toEqual({
        id: 'life/image',
        object: 'model',
        deleted: true,
      });
      for (const r of replicas)
        await eventually(
          async () => (await r.catalog.model('life/image')) === null,
          'the removed model on a replica',
          1_000,
        );
      expect((await cliJson(['model', 'update', '--id', 'life/image', '--enabled', 'false'])).body.error.code).toBe(
        'model_not_found',
      );
    } finally {
      for (const r of replicas) await r.state.close();
    }
  });

  it("shares a channel's circuit across replicas through Redis and shows it in `channel list`", async () => {
    const ch = await ok([
      'channel',
      'add',
      '--name',
      'life-breaker',
      '--kind',
      'openai',
      '--base-url',
      'http://127.0.0.1:9/',
    ]);
    const [a, b] = [await replica(), await replica()];
    try {
      const circuit = async () => (await ok(['channel', 'list'])).data.find((c: { id: string }) => c.id === ch.id);
      expect(await circuit()).toMatchObject({ circuit: 'closed', circuit_failures: 0 });
      // Failures on two replicas add up: 2 on a, 1 on b reach the threshold of 3.
      a.breaker.failure(ch.id);
      a.breaker.failure(ch.id);
      await eventually(async () => (await circuit()).circuit_failures === 2, 'two failures counted', 2_000);
      expect(b.breaker.state(ch.id)).toBe('closed');
      b.breaker.failure(ch.id);
      await eventually(
        () => a.breaker.state(ch.id) === 'open' && b.breaker.state(ch.id) === 'open',
        'the circuit open on both replicas',
        1_000,
      );
      expect(a.breaker.tryAcquire(ch.id)).toBe(false);
      expect(await circuit()).toMatchObject({ circuit: 'open', circuit_opened_at: expect.any(String) });
      // One success (a's half-open trial, say) closes it everywhere.
      b.breaker.success(ch.id);
      await eventually(() => a.breaker.state(ch.id) === 'closed', 'the circuit closed on the other replica', 1_000);
      await eventually(async () => (await circuit()).circuit === 'closed', 'closed in channel list', 2_000);
      const human = await cli(['channel', 'list']);
      expect(human.stdout).toMatch(/CIRCUIT/);
    } finally {
      await a.state.close();
      await b.state.close();
    }
  });

  it('channel test makes one real call and prints status and latency; a failing channel exits 1', async () => {
    const seen: { method?: string; url?: string; headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        res.writeHead(req.url === '/ok/eval' ? 200 : 503, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await ok([
        'channel',
        'add',
        '--name',
        'life-probe',
        '--kind',
        'evaluate',
        '--base-url',
        `${base}/ok`,
        '--evaluate-path',
        '/eval',
        '--secret',
        'probe-secret',
      ]);
      await ok(['model', 'add', '--id', 'life/probe-model', '--kind', 'evaluation', '--channels', 'life-probe']);
      const good = await cliJson(['channel', 'test', '--name', 'life-probe']);
      expect(good.code).toBe(0);
      expect(good.body).toMatchObject({
        channel: 'life-probe',
        status: 200,
        ok: true,
        url: `${base}/ok/eval`,
        latency_ms: expect.any(Number),
      });
      expect(good.stdout).not.toContain('probe-secret');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ method: 'POST', headers: { authorization: 'Bearer probe-secret' } });
      expect(JSON.parse(seen[0]!.body)).toMatchObject({ model: 'probe-model', questions: { ok: { type: 'boolean' } } });

      await ok(['channel', 'add', '--name', 'life-probe-bad', '--kind', 'openai', '--base-url', `${base}/down`]);
      const bad = await cliJson(['channel', 'test', '--name', 'life-probe-bad']);
      expect(bad.code).toBe(1);
      expect(bad.body).toMatchObject({ status: 503, ok: false, url: `${base}/down/v1/models` });
      await ok([
        'channel',
        'add',
        '--name',
        'life-probe-gone',
        '--kind',
        'openai',
        '--base-url',
        `http://127.0.0.1:${await freePort()}`,
      ]);
      const gone = await cliJson(['channel', 'test', '--name', 'life-probe-gone']);
      expect(gone.code).toBe(1);
      expect(gone.body).toMatchObject({ status: null, ok: false, error: 'ECONNREFUSED' });
    } finally {
      server.close();
    }
  });
});

describe('workspaces, members and users', () => {
  it('updates a workspace', async () => {
    const ws = await ok(['workspace', 'create', '--name', 'Acme', '--tier', 'payg']);
    const up = await ok([
      'workspace',
      'update',
      '--id',
      ws.id,
      '--name',
      'Acme Ltd',
      '--tier',
      'enterprise',
      '--rpm',
      '600',
      '--upload-rpm',
      '90',
      '--retention-days',
      '400',
    ]);
    expect(up).toMatchObject({
      id: ws.id,
      name: 'Acme Ltd',
      tier: 'enterprise',
      rpm: 600,
      upload_rpm: 90,
      retention_days: 400,
    });
    const down = await ok(['workspace', 'update', '--id', ws.id, '--tier', 'team']);
    expect(down).toMatchObject({ tier: 'team', retention_days: null });
    const refused = await cliJson(['workspace', 'update', '--id', ws.id, '--retention-days', '10']);
    expect(refused.body.error.code).toBe('retention_not_enterprise');
    expect((await cliJson(['workspace', 'update', '--id', 'ws_nope', '--rpm', '5'])).body.error.code).toBe(
      'workspace_not_found',
    );
  });

  it('lists and removes members (not the last owner), lists users, sets a password revoking sessions', async () => {
    const ws = await ok(['workspace', 'create', '--name', 'People', '--tier', 'team']);
    const owner = await ok(['user', 'create', '--email', 'own@example.com', '--password', 'owner-pass-1']);
    const dev = await ok(['user', 'create', '--email', 'dev2@example.com', '--password', 'dev-pass-12']);
    await ok(['member', 'add', '--workspace', ws.id, '--email', 'own@example.com', '--role', 'owner']);
    await ok(['member', 'add', '--workspace', ws.id, '--email', 'dev2@example.com', '--role', 'member']);
    const key = await ok(['key', 'create', '--workspace', ws.id, '--creator', 'dev2@example.com']);

    const members = await ok(['member', 'list', '--workspace', ws.id]);
    expect(members.data.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      ['own@example.com', 'owner'],
      ['dev2@example.com', 'member'],
    ]);
    const last = await cliJson(['member', 'remove', '--workspace', ws.id, '--email', 'own@example.com']);
    expect(last.code).toBe(1);
    expect(last.body.error.code).toBe('last_owner');
    const demoted = await cliJson([
      'member',
      'add',
      '--workspace',
      ws.id,
      '--email',
      'own@example.com',
      '--role',
      'admin',
    ]);
    expect(demoted.code).toBe(1);
    expect(demoted.body.error.code).toBe('last_owner');
    expect((await ok(['member', 'list', '--workspace', ws.id])).data[0]).toMatchObject({
      user_id: owner.id,
      role: 'owner',
    });
    const removed = await ok(['member', 'remove', '--workspace', ws.id, '--email', 'dev2@example.com']);
    expect(removed).toMatchObject({ user_id: dev.id, role: 'member', removed: true, keys_stopped: [key.id] });
    expect(
      (await cliJson(['member', 'remove', '--workspace', ws.id, '--email', 'dev2@example.com'])).body.error.code,
    ).toBe('not_a_member');

    const users = await ok(['user', 'list']);
    expect(users.data.find((u: { id: string }) => u.id === owner.id)).toMatchObject({
      email: 'own@example.com',
      workspaces: 1,
    });

    const live = await sessionRepository.create(ctx.db, {
      userId: owner.id,
      tokenHash: randomBytes(32).toString('hex'),
    });
    await sessionRepository.create(ctx.db, { userId: owner.id, tokenHash: randomBytes(32).toString('hex') });
    const other = await sessionRepository.create(ctx.db, {
      userId: dev.id,
      tokenHash: randomBytes(32).toString('hex'),
    });
    const set = await cliJson(['user', 'set-password', '--email', 'OWN@example.com', '--password', 'brand-new-pass']);
    expect(set.code).toBe(0);
    expect(set.body).toEqual({ id: owner.id, email: 'own@example.com', password_changed: true, sessions_revoked: 2 });
    expect(set.stdout + set.stderr).not.toContain('brand-new-pass');
    expect(await sessionRepository.findLive(ctx.db, live.tokenHash)).toBeNull();
    expect(await sessionRepository.findLive(ctx.db, other.tokenHash)).not.toBeNull();
    const row = await userRepository.findByEmail(ctx.db, 'own@example.com');
    expect(await verifyPassword('brand-new-pass', row!.passwordHash)).toBe(true);
    expect(await verifyPassword('owner-pass-1', row!.passwordHash)).toBe(false);
    expect(
      (await cliJson(['user', 'set-password', '--email', 'nobody@example.com', '--password', 'whatever-123'])).body
        .error.code,
    ).toBe('user_not_found');
  });
});

describe('usage report', () => {
  it('sums charges net of refunds per day, model or key over the period, as JSON, a table or CSV', async () => {
    const ws = await ok(['workspace', 'create', '--name', 'Usage', '--tier', 'payg']);
    const k1 = await ok(['key', 'create', '--workspace', ws.id, '--name', 'one']);
    const k2 = await ok(['key', 'create', '--workspace', ws.id, '--name', 'two']);
    const entry = (day: string, kind: 'charge' | 'refund', amount: bigint, model: string, apiKeyId: string) =>
      ctx.db.ledgerEntry.create({
        data: {
          id: `led_${randomBytes(8).toString('hex')}`,
          workspaceId: ws.id,
          kind,
          amount,
          balanceAfter: 0n,
          model,
          apiKeyId,
          createdAt: new Date(`${day}T12:00:00Z`),
        },
      });
    await entry('2026-11-01', 'charge', -1_500_000n, 'sim/chat-1', k1.id);
    await entry('2026-11-01', 'charge', -250_000n, 'sim/eval-1', k2.id);
    await entry('2026-11-02', 'charge', -1_000_000n, 'sim/chat-1', k2.id);
    await entry('2026-11-02', 'refund', 500_000n, 'sim/chat-1', k2.id);
    await entry('2026-11-05', 'charge', -9_000_000n, 'sim/chat-1', k1.id); // outside the period

    const period = ['--workspace', ws.id, '--from', '2026-11-01', '--to', '2026-11-02'];
    const byDay = await ok(['usage', 'report', ...period]);
    expect(byDay).toEqual({
      object: 'usage_report',
      workspace_id: ws.id,
      from: '2026-11-01',
      to: '2026-11-02',
      group_by: 'day',
      currency: 'USD',
      total: 2.25,
      data: [
        { day: '2026-11-01', amount: 1.75 },
        { day: '2026-11-02', amount: 0.5 },
      ],
    });
    const byModel = await ok(['usage', 'report', ...period, '--group-by', 'model']);
    expect(byModel.data).toEqual([
      { model: 'sim/chat-1', amount: 2 },
      { model: 'sim/eval-1', amount: 0.25 },
    ]);
    const byKey = await ok(['usage', 'report', ...period, '--group-by', 'key']);
    expect(byKey.data).toEqual([
      { key_id: k1.id, amount: 1.5 },
      { key_id: k2.id, amount: 0.75 },
    ]);
    const csv = await cli(['usage', 'report', ...period, '--group-by', 'model', '--csv']);
    expect(csv.code).toBe(0);
    expect(csv.stdout).toBe('model,amount\nsim/chat-1,2\nsim/eval-1,0.25\n');
    const wide = await ok(['usage', 'report', '--workspace', ws.id, '--from', '2026-11-01', '--to', '2026-11-30']);
    expect(wide.total).toBe(11.25);
  });
});

it.each([
  ['channel update without --id or --name', ['channel', 'update', '--weight', '2']],
  ['channel update with both --id and --name', ['channel', 'update', '--id', 'ch_x', '--name', 'x', '--weight', '2']],
  ['channel update with nothing to change', ['channel', 'update', '--name', 'x']],
  ['a bad --weight', ['channel', 'update', '--name', 'x', '--weight', 'heavy']],
  ['channel test without --name', ['channel', 'test']],
  ['model update with a bad --enabled', ['model', 'update', '--id', 'a/b', '--enabled', 'yes']],
  ['model update with nothing to change', ['model', 'update', '--id', 'a/b']],
  ['workspace update with a bad --tier', ['workspace', 'update', '--id', 'ws_x', '--tier', 'gold']],
  ['member remove without --email', ['member', 'remove', '--workspace', 'ws_x']],
  ['user delete without --email', ['user', 'delete']],
  ['a short new password', ['user', 'set-password', '--email', 'a@example.com', '--password', 'short']],
  ['a bad --group-by', ['usage', 'report', '--workspace', 'ws_x', '--group-by', 'week']],
  ['a bad --from', ['usage', 'report', '--workspace', 'ws_x', '--from', '2026-13-01']],
  ['--from after --to', ['usage', 'report', '--workspace', 'ws_x', '--from', '2026-11-05', '--to', '2026-11-01']],
])('rejects %s with usage and exit code 2', async (_what, args) => {
  const run = await cli([...args, '--json']);
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
  expect(run.stderr).toContain('Usage: ');
});

it('rejects --csv with --json (exit 2)', async () => {
  const run = await cli(['usage', 'report', '--workspace', 'ws_x', '--csv', '--json']);
  expect(run.code).toBe(2);
});
