import { useTestContext } from '@gensvc/testing';
import { newApiKey } from '@gensvc/auth';
import { apiKeyRepository } from './api-key.repository';
import { workspaceRepository } from './workspace.repository';

describe('repositories against Postgres', () => {
  const ctx = useTestContext();

  it('books an opening balance and every top-up in the ledger, exactly, under concurrency', async () => {
    const ws = await workspaceRepository.create(ctx.db, { name: 'Acme', tier: 'team', balance: 10_000_000n });
    expect(ws.balance).toBe(10_000_000n);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => workspaceRepository.topUp(ctx.db, ws.id, 1_000n)),
    );
    expect(new Set(results.map(String)).size).toBe(50);
    const after = await workspaceRepository.get(ctx.db, ws.id);
    expect(after!.balance).toBe(10_050_000n);
    const sum = await ctx.db.ledgerEntry.aggregate({
      where: { workspaceId: ws.id },
      _sum: { amount: true },
      _count: true,
    });
    expect(sum._count).toBe(51);
    expect(sum._sum.amount).toBe(10_050_000n);
    expect(await workspaceRepository.topUp(ctx.db, 'ws_missing', 1n)).toBeNull();
  });

  it('leaves no workspace behind when its opening balance cannot be booked', async () => {
    const before = await ctx.db.workspace.count();
    // Past Postgres's bigint: the balance update fails after the workspace row was written.
    await expect(
      workspaceRepository.create(ctx.db, { name: 'Overflow', tier: 'free', balance: 2n ** 63n }),
    ).rejects.toThrow();
    expect(await ctx.db.workspace.count()).toBe(before);
    expect(await ctx.db.workspace.findFirst({ where: { name: 'Overflow' } })).toBeNull();
  });

  it('rotates a key keeping its row, cap and spend; the old secret lives only through the grace period', async () => {
    const ws = await workspaceRepository.create(ctx.db, { name: 'Rot', tier: 'payg' });
    const first = newApiKey();
    const key = await apiKeyRepository.create(ctx.db, {
      workspaceId: ws.id,
      name: 'k',
      prefix: first.prefix,
      hash: first.hash,
      scopes: ['account.read'],
      spendCap: 5_000_000n,
      createdVia: 'cli',
    });
    const second = newApiKey();
    const rotated = await apiKeyRepository.rotate(ctx.db, key.id, second, 60_000);
    expect(rotated).toMatchObject({ id: key.id, hash: second.hash, previousHash: first.hash, spendCap: 5_000_000n });
    expect((await apiKeyRepository.findBySecretHash(ctx.db, first.hash))?.matched).toBe('previous');
    expect((await apiKeyRepository.findBySecretHash(ctx.db, second.hash))?.matched).toBe('current');
    const third = newApiKey();
    await apiKeyRepository.rotate(ctx.db, key.id, third, 0);
    expect(await apiKeyRepository.findBySecretHash(ctx.db, first.hash)).toBeNull();
    expect(await apiKeyRepository.findBySecretHash(ctx.db, second.hash)).toBeNull();
    expect((await apiKeyRepository.findBySecretHash(ctx.db, third.hash))?.key.id).toBe(key.id);
    // Rotations racing each other: every new secret but one is dropped, and exactly one stays current.
    const racers = Array.from({ length: 10 }, () => newApiKey());
    await Promise.all(racers.map((r) => apiKeyRepository.rotate(ctx.db, key.id, r, 60_000)));
    const after = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(racers.filter((r) => r.hash === after.hash)).toHaveLength(1);
    expect(racers.some((r) => r.hash === after.previousHash)).toBe(true);
    expect(after.previousExpiresAt!.getTime() - Date.now()).toBeGreaterThan(55_000);
    const revoked = await apiKeyRepository.revoke(ctx.db, key.id);
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
    expect(await apiKeyRepository.rotate(ctx.db, key.id, newApiKey(), 0)).toBeNull();
    expect(await apiKeyRepository.get(ctx.db, key.id, 'ws_other')).toBeNull();
  });
});
