// Where a key was made, apart from who made it: the migration that adds the column classifies the rows it finds, and
// a key whose creator is deleted reads as gone (its creator left), never as a key the CLI made.
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newApiKey } from '@gensvc/auth';
import { adminUrl, makeKey, makeMember, makeWorkspace, useTestContext, withAdmin } from '@gensvc/testing';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../migrate';
import { apiKeyRepository, creatorRoleOf } from './api-key.repository';
import { userRepository } from './user.repository';

const ctx = useTestContext();
const MIGRATION = '20261129090000_key_created_via';

describe('the key_created_via migration', () => {
  const name = `gensvc_t${process.env.GENSVC_TEST_RUN}_kcv_${randomBytes(4).toString('hex')}`;
  // The test server (jest's global setup names it), in a database of this test's own.
  const url = new URL(process.env.DATABASE_URL!);
  let dir = '';

  beforeAll(async () => {
    url.pathname = `/${name}`;
    await withAdmin(adminUrl(url.toString()), (c) => c.query(`CREATE DATABASE "${name}"`));
    // Every migration before this one, as a database that has not yet taken it.
    dir = mkdtempSync(join(tmpdir(), 'gensvc-migrations-'));
    for (const m of readdirSync(MIGRATIONS_DIR).filter((m) => m < MIGRATION))
      cpSync(join(MIGRATIONS_DIR, m), join(dir, m), { recursive: true });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await withAdmin(adminUrl(url.toString()), (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });

  it('marks keys without a creator as made by the CLI and the others as made on the dashboard', async () => {
    await migrate(url.toString(), dir);
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    try {
      await c.query(`INSERT INTO "Workspace" (id, name, tier) VALUES ('ws_m', 'M', 'payg')`);
      await c.query(`INSERT INTO "User" (id, email, "passwordHash") VALUES ('usr_m', 'm@example.com', 'x')`);
      const key = (id: string, creator: string | null) =>
        c.query(
          `INSERT INTO "ApiKey" (id, "workspaceId", "creatorId", name, prefix, hash, scopes)
           VALUES ($1, 'ws_m', $2, $1, $1, $1, '{}')`,
          [id, creator],
        );
      await key('key_cli', null);
      await key('key_person', 'usr_m');

      expect((await migrate(url.toString())).applied[0]).toBe(MIGRATION);
      const { rows } = await c.query(`SELECT id, "createdVia" FROM "ApiKey" ORDER BY id`);
      expect(rows).toEqual([
        { id: 'key_cli', createdVia: 'cli' },
        { id: 'key_person', createdVia: 'dashboard' },
      ]);
      // A CLI key never has a creator: the database refuses one.
      await expect(c.query(`UPDATE "ApiKey" SET "creatorId" = 'usr_m' WHERE id = 'key_cli'`)).rejects.toThrow(
        /ApiKey_cli_has_no_creator/,
      );
    } finally {
      await c.end();
    }
  });
});

describe('a deleted creator', () => {
  const made = async (workspaceId: string, creatorId: string, createdVia: 'dashboard' | 'cli_for_member') => {
    const k = newApiKey();
    await apiKeyRepository.create(ctx.db, {
      workspaceId,
      name: createdVia,
      prefix: k.prefix,
      hash: k.hash,
      scopes: ['account.read'],
      creatorId,
      createdVia,
    });
    return k.hash;
  };
  const roleOf = async (hash: string) => creatorRoleOf((await apiKeyRepository.findBySecretHash(ctx.db, hash))!.key);

  it('leaves their keys refused (left), not bounded by scopes alone as a CLI key is', async () => {
    const ws = await makeWorkspace(ctx.db);
    const member = await makeMember(ctx.db, ws.id, 'admin');
    const dashboardKey = await made(ws.id, member.user.id, 'dashboard');
    const cliForMember = await made(ws.id, member.user.id, 'cli_for_member');
    const { key: cliKey } = await makeKey(ctx.db, ws.id);
    expect(await roleOf(dashboardKey)).toBe('admin');
    expect(await roleOf(cliForMember)).toBe('admin');

    const removed = await userRepository.remove(ctx.db, member.user.id);
    expect(removed.ok && removed.keyIds.sort()).toEqual(
      (await ctx.db.apiKey.findMany({ where: { workspaceId: ws.id, createdVia: { not: 'cli' } } }))
        .map((k) => k.id)
        .sort(),
    );
    expect(await roleOf(dashboardKey)).toBe('left');
    expect(await roleOf(cliForMember)).toBe('left');
    const cli = await apiKeyRepository.findBySecretHash(ctx.db, cliKey.hash);
    expect(creatorRoleOf(cli!.key)).toBe('unbounded');
    expect(await ctx.db.apiKey.count({ where: { workspaceId: ws.id, creatorId: null } })).toBe(3);
  });

  it('is refused while they are the last owner of a workspace, and nothing changes', async () => {
    const ws = await makeWorkspace(ctx.db);
    const owner = await makeMember(ctx.db, ws.id, 'owner');
    const hash = await made(ws.id, owner.user.id, 'dashboard');
    expect(await userRepository.remove(ctx.db, owner.user.id)).toEqual({
      ok: false,
      reason: 'last_owner',
      workspaceId: ws.id,
    });
    expect(await ctx.db.user.count({ where: { id: owner.user.id } })).toBe(1);
    expect(await roleOf(hash)).toBe('owner');

    const second = await makeMember(ctx.db, ws.id, 'owner');
    expect((await userRepository.remove(ctx.db, owner.user.id)).ok).toBe(true);
    expect(await userRepository.remove(ctx.db, owner.user.id)).toEqual({ ok: false, reason: 'not_found' });
    expect(await ctx.db.membership.findMany({ where: { workspaceId: ws.id } })).toEqual([
      expect.objectContaining({ userId: second.user.id, role: 'owner' }),
    ]);
  });
});
