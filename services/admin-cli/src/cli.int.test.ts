// The built CLI as a real child process against this file's own database, Redis and queue prefix (cli-under-test).
import { API_KEY_PATTERN, hashApiKey, SCOPES } from '@gensvc/auth';
import { keyInvalidationChannel } from '@gensvc/contracts';
import { apiKeyRepository, openChannel } from '@gensvc/db';
import { eventually, useTestContext } from '@gensvc/testing';
import { Redis } from 'ioredis';
import { cliFor } from './cli-under-test';

const ctx = useTestContext();
const { cli, cliJson, ok } = cliFor(ctx);

async function newWorkspace(balance = '10.5') {
  return ok(['workspace', 'create', '--name', 'Acme', '--tier', 'payg', '--balance', balance]);
}

/** Subscribes a second connection to the invalidation channel; `next()` resolves with the next key id published. */
async function invalidations() {
  const sub = new Redis(ctx.env.REDIS_URL!);
  const seen: string[] = [];
  sub.on('message', (_channel: string, message: string) => seen.push(message));
  await sub.subscribe(keyInvalidationChannel(ctx.env.QUEUE_PREFIX!));
  return {
    next: (timeoutMs = 2_000) => eventually(() => seen.shift(), 'a key invalidation', timeoutMs),
    close: () => sub.disconnect(),
  };
}

describe('admin CLI', () => {
  it('migrate reports an up-to-date database', async () => {
    expect(await ok(['migrate'])).toEqual({ applied: [] });
  });

  it('creates and lists workspaces, booking the opening balance in the ledger', async () => {
    const ws = await newWorkspace('10.5');
    expect(ws).toEqual({
      id: expect.stringMatching(/^ws_/),
      name: 'Acme',
      tier: 'payg',
      balance: 10.5,
      currency: 'USD',
      rpm: 300,
      upload_rpm: 60,
      retention_days: null,
      created_at: expect.any(String),
    });
    const row = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
    expect(row.balance).toBe(10_500_000n);
    const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id } });
    expect(ledger.map((l) => [l.kind, l.amount, l.balanceAfter])).toEqual([['topup', 10_500_000n, 10_500_000n]]);

    const ent = await ok(['workspace', 'create', '--name', 'Big', '--tier', 'enterprise', '--retention-days', '400']);
    expect(ent).toMatchObject({ tier: 'enterprise', balance: 0, retention_days: 400 });

    const list = await ok(['workspace', 'list']);
    expect(list.object).toBe('list');
    expect(list.data.map((w: { id: string }) => w.id)).toEqual(expect.arrayContaining([ws.id, ent.id]));

    const human = await cli(['workspace', 'list']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(ws.id);
    expect(() => JSON.parse(human.stdout)).toThrow();
  });

  it('creates users without ever printing the password, and adds members', async () => {
    const user = await ok([
      'user',
      'create',
      '--email',
      'Ops@Example.com',
      '--password',
      'hunter2-long',
      '--name',
      'Ops',
    ]);
    expect(user).toEqual({
      id: expect.stringMatching(/^usr_/),
      email: 'ops@example.com',
      name: 'Ops',
      created_at: expect.any(String),
    });
    const row = await ctx.db.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(row.passwordHash).toMatch(/^scrypt\$/);
    expect(row.passwordHash).not.toContain('hunter2-long');

    const dup = await cliJson(['user', 'create', '--email', 'ops@example.com', '--password', 'another-one']);
    expect(dup.code).toBe(1);
    expect(dup.body).toEqual({ error: { code: 'duplicate_email', message: expect.any(String) } });
    expect(dup.stdout + dup.stderr).not.toContain('another-one');

    const ws = await newWorkspace();
    const member = await ok(['member', 'add', '--workspace', ws.id, '--email', 'ops@example.com', '--role', 'admin']);
    expect(member).toMatchObject({ id: `${ws.id}:${user.id}`, workspace_id: ws.id, user_id: user.id, role: 'admin' });
    const again = await ok(['member', 'add', '--workspace', ws.id, '--email', 'ops@example.com', '--role', 'owner']);
    expect(again.role).toBe('owner');

    const missing = await cliJson([
      'member',
      'add',
      '--workspace',
      ws.id,
      '--email',
      'nobody@example.com',
      '--role',
      'member',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.body.error.code).toBe('user_not_found');
  });

  it('creates a key whose secret is shown once and stored as its SHA-256; lists keys without secrets', async () => {
    const ws = await newWorkspace();
    const created = await ok(['key', 'create', '--workspace', ws.id, '--name', 'ci']);
    expect(created).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(API_KEY_PATTERN),
      prefix: created.key.slice(0, 12),
      name: 'ci',
      workspace_id: ws.id,
      created_via: 'cli',
      creator_id: null,
      scopes: [...SCOPES],
      spend_cap: null,
      spent: 0,
      models: 'all',
      rpm: null,
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
      previous_prefix: null,
      previous_expires_at: null,
      created_at: expect.any(String),
    });
    expect(created.key).toMatch(/^gsk_[A-Za-z0-9_-]{43}$/);
    const row = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.hash).toBe(hashApiKey(created.key));
    const stored = JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    expect(stored).not.toContain(created.key);
    expect(stored).not.toContain(created.key.slice(12));

    await ok(['user', 'create', '--email', 'dev@example.com', '--password', 'correct horse']);
    await ok(['member', 'add', '--workspace', ws.id, '--email', 'dev@example.com', '--role', 'member']);
    const limited = await ok([
      'key',
      'create',
      '--workspace',
      ws.id,
      '--scopes',
      'llm.chat, tasks.read',
      '--spend-cap',
      '5.25',
      '--expires-in',
      '30d',
      '--creator',
      'dev@example.com',
    ]);
    expect(limited).toMatchObject({
      created_via: 'cli_for_member',
      creator_id: expect.stringMatching(/^usr_/),
      scopes: ['llm.chat', 'tasks.read'],
      spend_cap: 5.25,
      spent: 0,
    });
    expect(Date.parse(limited.expires_at) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 60_000);
    const limitedRow = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: limited.id } });
    expect(limitedRow.spendCap).toBe(5_250_000n);
    expect(limitedRow.creatorId).not.toBeNull();

    const listed = await cliJson(['key', 'list', '--workspace', ws.id]);
    expect(listed.code).toBe(0);
    expect(listed.body.object).toBe('list');
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([created.id, limited.id]);
    for (const k of listed.body.data) {
      expect(k).not.toHaveProperty('key');
      expect(k).not.toHaveProperty('hash');
    }
    for (const secret of [created.key, limited.key]) expect(listed.stdout).not.toContain(secret);
    expect(listed.stdout).not.toContain(row.hash);
    expect(listed.stdout).not.toContain(limitedRow.hash);
  });

  it('rotates a key: the new secret works, the old is "previous" within the grace; --grace 0 ends it', async () => {
    const ws = await newWorkspace();
    const created = await ok(['key', 'create', '--workspace', ws.id]);
    const sub = await invalidations();
    try {
      const rotated = await ok(['key', 'rotate', '--id', created.id]);
      expect(rotated).toMatchObject({
        id: created.id,
        key: expect.stringMatching(API_KEY_PATTERN),
        previous_prefix: created.prefix,
      });
      expect(rotated.key).not.toBe(created.key);
      expect(rotated.prefix).toBe(rotated.key.slice(0, 12));
      const grace = Date.parse(rotated.previous_expires_at) - Date.now();
      expect(grace).toBeGreaterThan(24 * 3_600_000 - 60_000);
      expect(grace).toBeLessThanOrEqual(24 * 3_600_000);
      expect(await sub.next()).toBe(created.id);

      const current = await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(rotated.key));
      expect(current).toMatchObject({ key: { id: created.id }, matched: 'current' });
      const previous = await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(created.key));
      expect(previous).toMatchObject({ key: { id: created.id }, matched: 'previous' });

      const now = await ok(['key', 'rotate', '--id', created.id, '--grace', '0']);
      expect(now.previous_expires_at).toBeNull();
      expect(await sub.next()).toBe(created.id);
      expect(await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(now.key))).toMatchObject({
        matched: 'current',
      });
      expect(await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(rotated.key))).toBeNull();
      expect(await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(created.key))).toBeNull();
    } finally {
      sub.close();
    }
  });

  it('revokes a key and publishes its id on the invalidation channel', async () => {
    const ws = await newWorkspace();
    const created = await ok(['key', 'create', '--workspace', ws.id]);
    const sub = await invalidations();
    try {
      const revoked = await ok(['key', 'revoke', '--id', created.id]);
      expect(revoked).toMatchObject({ id: created.id, revoked_at: expect.any(String) });
      expect(revoked).not.toHaveProperty('key');
      expect(await sub.next()).toBe(created.id);
      const row = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: created.id } });
      expect(row.revokedAt?.toISOString()).toBe(revoked.revoked_at);

      const rotate = await cliJson(['key', 'rotate', '--id', created.id]);
      expect(rotate.code).toBe(1);
      expect(rotate.body.error.code).toBe('key_revoked');

      const missing = await cliJson(['key', 'revoke', '--id', 'key_doesnotexist']);
      expect(missing.code).toBe(1);
      expect(missing.body.error.code).toBe('key_not_found');
    } finally {
      sub.close();
    }
  });

  it("limits a key's models and rpm at creation, changes them with key limit, refuses unknown models", async () => {
    const ws = await newWorkspace();
    await ctx.db.model.createMany({
      data: [
        { id: 'acme/chat-1', kind: 'chat' },
        { id: 'acme/judge-9', kind: 'evaluation' },
      ],
    });
    const made = await ok([
      'key',
      'create',
      '--workspace',
      ws.id,
      '--models',
      'acme/chat-1, acme/judge-9',
      '--rpm',
      '12',
    ]);
    expect(made).toMatchObject({ models: ['acme/chat-1', 'acme/judge-9'], rpm: 12 });
    expect(await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(made.key))).toMatchObject({
      key: { allowedModels: ['acme/chat-1', 'acme/judge-9'], rpm: 12 },
    });

    const sub = await invalidations();
    try {
      const narrowed = await ok(['key', 'limit', '--id', made.id, '--models', 'acme/chat-1']);
      expect(narrowed).toMatchObject({ models: ['acme/chat-1'], rpm: 12 });
      expect(await sub.next()).toBe(made.id);
      const opened = await ok(['key', 'limit', '--id', made.id, '--models', 'all', '--rpm', 'none']);
      expect(opened).toMatchObject({ models: 'all', rpm: null });
      expect(await sub.next()).toBe(made.id);
    } finally {
      sub.close();
    }
    expect(await apiKeyRepository.findBySecretHash(ctx.db, hashApiKey(made.key))).toMatchObject({
      key: { allowedModels: [], rpm: null },
    });

    const typo = await cliJson(['key', 'create', '--workspace', ws.id, '--models', 'acme/chat-1,acme/chat-2']);
    expect(typo.code).toBe(1);
    expect(typo.body.error).toEqual({ code: 'model_not_found', message: 'No model "acme/chat-2".' });
    expect(await ctx.db.apiKey.count({ where: { workspaceId: ws.id } })).toBe(1);
    for (const args of [
      ['key', 'create', '--workspace', ws.id, '--rpm', '0'],
      ['key', 'create', '--workspace', ws.id, '--models', 'chat-1'],
      ['key', 'limit', '--id', made.id],
    ]) {
      expect((await cli(args)).code).toBe(2);
    }
  });

  it('tops up a balance by exactly the amount and writes a ledger entry', async () => {
    const ws = await newWorkspace('10.5');
    const topped = await ok(['balance', 'topup', '--workspace', ws.id, '--amount', '0.000001']);
    expect(topped).toEqual({
      id: ws.id,
      object: 'balance',
      workspace_id: ws.id,
      amount: 10.500001,
      added: 0.000001,
      currency: 'USD',
    });
    const more = await ok(['balance', 'topup', '--workspace', ws.id, '--amount', '89.499999']);
    expect(more.amount).toBe(100);
    const row = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
    expect(row.balance).toBe(100_000_000n);
    const ledger = await ctx.db.ledgerEntry.findMany({
      where: { workspaceId: ws.id },
      orderBy: { balanceAfter: 'asc' },
    });
    expect(ledger.map((l) => [l.kind, l.amount, l.balanceAfter])).toEqual([
      ['topup', 10_500_000n, 10_500_000n],
      ['topup', 1n, 10_500_001n],
      ['topup', 89_499_999n, 100_000_000n],
    ]);
  });

  it('adds and lists channels without ever printing their secrets', async () => {
    const secret = 'sk-upstream-very-secret';
    const added = await cliJson([
      'channel',
      'add',
      '--name',
      'sim-a',
      '--kind',
      'evaluate',
      '--base-url',
      'http://127.0.0.1:9/',
      '--secret',
      secret,
      '--priority',
      '5',
      '--weight',
      '2',
      '--timeout-ms',
      '5000',
    ]);
    expect(added.code).toBe(0);
    expect(added.body).toMatchObject({
      id: expect.stringMatching(/^ch_/),
      name: 'sim-a',
      kind: 'evaluate',
      has_secret: true,
      evaluate_path: '/evaluate',
      priority: 5,
      weight: 2,
      timeout_ms: 5000,
    });
    expect(added.stdout).not.toContain(secret);
    expect(added.body).not.toHaveProperty('secret');
    const plain = await ok([
      'channel',
      'add',
      '--name',
      'sim-b',
      '--kind',
      'openai',
      '--base-url',
      'https://api.example.com/v1',
    ]);
    expect(plain.has_secret).toBe(false);
    const stored = await ctx.db.channel.findUniqueOrThrow({ where: { name: 'sim-a' } });
    expect(stored.secret).toMatch(/^v1:/);
    expect(stored.secret).not.toContain(secret);
    expect(openChannel(ctx.secrets, stored).secret).toBe(secret);

    const listed = await cliJson(['channel', 'list']);
    const sims = listed.body.data.filter((c: { name: string }) => c.name.startsWith('sim-'));
    expect(sims.map((c: { name: string; has_secret: boolean }) => [c.name, c.has_secret])).toEqual([
      ['sim-a', true],
      ['sim-b', false],
    ]);
    expect(listed.stdout).not.toContain(secret);
    const human = await cli(['channel', 'list']);
    expect(human.stdout).toContain('sim-a');
    expect(human.stdout).not.toContain(secret);

    const dup = await cliJson([
      'channel',
      'add',
      '--name',
      'sim-a',
      '--kind',
      'evaluate',
      '--base-url',
      'http://127.0.0.1:9/',
    ]);
    expect(dup.code).toBe(1);
    expect(dup.body.error.code).toBe('duplicate_channel');
  });

  it('adds a model routed to the named channels', async () => {
    await ok(['channel', 'add', '--name', 'route-1', '--kind', 'evaluate', '--base-url', 'http://127.0.0.1:9/']);
    await ok(['channel', 'add', '--name', 'route-2', '--kind', 'evaluate', '--base-url', 'http://127.0.0.1:9/']);
    const model = await ok([
      'model',
      'add',
      '--id',
      'acme/judge-1',
      '--kind',
      'evaluation',
      '--input-price',
      '0.5',
      '--output-price',
      '1.5',
      '--input-only',
      '--max-output-tokens',
      '256',
      '--channels',
      'route-1,route-2',
    ]);
    expect(model).toEqual({
      id: 'acme/judge-1',
      kind: 'evaluation',
      enabled: true,
      input_price: 0.5,
      output_price: 1.5,
      unit_price: 0,
      input_only: true,
      max_output_tokens: 256,
      channels: ['route-1', 'route-2'],
      created_at: expect.any(String),
    });
    const row = await ctx.db.model.findUniqueOrThrow({
      where: { id: 'acme/judge-1' },
      include: { routes: { include: { channel: true } } },
    });
    expect(row.inputPricePerMTok).toBe(500_000n);
    expect(row.routes.map((r) => r.channel.name).sort()).toEqual(['route-1', 'route-2']);

    const listed = await ok(['model', 'list']);
    const entry = listed.data.find((m: { id: string }) => m.id === 'acme/judge-1');
    expect(entry.channels.sort()).toEqual(['route-1', 'route-2']);

    const unknown = await cliJson([
      'model',
      'add',
      '--id',
      'acme/judge-2',
      '--kind',
      'evaluation',
      '--channels',
      'route-1,nope',
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.body.error.code).toBe('channel_not_found');
    expect(await ctx.db.model.findUnique({ where: { id: 'acme/judge-2' } })).toBeNull();

    const dup = await cliJson([
      'model',
      'add',
      '--id',
      'acme/judge-1',
      '--kind',
      'evaluation',
      '--channels',
      'route-1',
    ]);
    expect(dup.code).toBe(1);
    expect(dup.body.error.code).toBe('duplicate_model');
  });

  it.each([
    ['an unknown command', ['frobnicate']],
    ['no command', []],
    ['a missing --workspace', ['key', 'create']],
    ['a bad --tier', ['workspace', 'create', '--name', 'X', '--tier', 'gold']],
    ['a bad --amount', ['balance', 'topup', '--workspace', 'ws_x', '--amount', 'ten']],
    ['a zero --amount', ['balance', 'topup', '--workspace', 'ws_x', '--amount', '0']],
    ['an unknown scope', ['key', 'create', '--workspace', 'ws_x', '--scopes', 'llm.chat,root']],
    ['an unknown flag', ['workspace', 'list', '--verbose']],
    ['a flag without its value', ['key', 'list', '--workspace']],
    ['a stray argument', ['key', 'list', '--workspace', 'ws_x', 'extra']],
    ['a bad --grace', ['key', 'rotate', '--id', 'key_x', '--grace', 'soon']],
    ['a bad model id', ['model', 'add', '--id', 'judge', '--kind', 'chat', '--channels', 'a']],
  ])('rejects %s with usage on stderr, nothing on stdout and exit code 2', async (_what, args) => {
    for (const json of [true, false]) {
      const run = await cli(json ? [...args, '--json'] : args);
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
      expect(run.stderr).toMatch(/^error: /);
      expect(run.stderr).toContain('Usage: ');
    }
  });

  it('answers an unknown workspace with exit code 1 and a JSON error', async () => {
    for (const args of [
      ['key', 'create', '--workspace', 'ws_unknown'],
      ['key', 'list', '--workspace', 'ws_unknown'],
      ['balance', 'topup', '--workspace', 'ws_unknown', '--amount', '1'],
      ['member', 'add', '--workspace', 'ws_unknown', '--email', 'a@example.com', '--role', 'member'],
    ]) {
      const run = await cliJson(args);
      expect(run.code).toBe(1);
      expect(run.body).toEqual({ error: { code: 'workspace_not_found', message: 'No workspace "ws_unknown".' } });
    }
  });
});
