import { makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { billingRepository } from './billing.repository';

const ctx = useTestContext();
const TTL = 60_000;

async function state(workspaceId: string, keyId: string) {
  const ws = await ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const key = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: keyId } });
  const held = await ctx.db.reservation.aggregate({ where: { workspaceId, state: 'held' }, _sum: { amount: true } });
  const ledger = await billingRepository.ledgerTotal(ctx.db, workspaceId);
  return { balance: ws.balance, spent: key.spent, reserved: key.reserved, held: held._sum.amount ?? 0n, ledger };
}

describe('billing', () => {
  it('admits exactly what the cap allows when 500 reservations race, and the books balance', async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 1_000_000_000n });
    const { key } = await makeKey(ctx.db, ws.id, { spendCap: 1_000_000n }); // 100 × 10_000
    const outcomes = await Promise.allSettled(
      Array.from({ length: 500 }, (_, i) =>
        billingRepository.reserve(ctx.db, {
          workspaceId: ws.id,
          apiKeyId: key.id,
          requestId: `req_${i}`,
          amount: 10_000n,
          ttlMs: TTL,
        }),
      ),
    );
    const held = outcomes
      .filter((o) => o.status === 'fulfilled')
      .map((o) => (o as PromiseFulfilledResult<{ id: string }>).value.id);
    const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
    expect(held).toHaveLength(100);
    expect(new Set(refused.map((e) => `${e.status} ${e.code}`))).toEqual(new Set(['402 spending_cap_exhausted']));

    // Settle half below the hold (the rest comes back), settle again (no second charge), release the other half.
    const settled = await Promise.all(
      held.slice(0, 50).map((id) => billingRepository.settle(ctx.db, id, { cost: 7_000n, model: 'sim/eval-1' })),
    );
    expect(settled.every((s) => s?.charged === 7_000n)).toBe(true);
    const again = await Promise.all(
      held.slice(0, 50).map((id) => billingRepository.settle(ctx.db, id, { cost: 7_000n })),
    );
    expect(again.every((s) => s === null)).toBe(true);
    expect(await Promise.all(held.slice(50).map((id) => billingRepository.release(ctx.db, id)))).toEqual(
      Array(50).fill(true),
    );
    expect(await billingRepository.release(ctx.db, held[0]!)).toBe(false);

    const s = await state(ws.id, key.id);
    expect(s.spent).toBe(350_000n);
    expect(s.reserved).toBe(0n);
    expect(s.held).toBe(0n);
    expect(s.balance).toBe(1_000_000_000n - 350_000n);
    expect(s.ledger).toBe(s.balance);
    const charges = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
    expect(charges).toHaveLength(50);
    expect(charges.reduce((sum, c) => sum - c.amount, 0n)).toBe(s.spent);
  });

  it('never lets the balance go below zero, and undoes the key hold when the balance refuses', async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 250_000n });
    const { key } = await makeKey(ctx.db, ws.id, { spendCap: null });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        billingRepository.reserve(ctx.db, {
          workspaceId: ws.id,
          apiKeyId: key.id,
          requestId: `r${i}`,
          amount: 10_000n,
          ttlMs: TTL,
        }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(25);
    expect(
      outcomes
        .filter((o) => o.status === 'rejected')
        .every((o) => (o as PromiseRejectedResult).reason.code === 'insufficient_balance'),
    ).toBe(true);
    const s = await state(ws.id, key.id);
    expect(s.balance).toBe(0n);
    expect(s.reserved).toBe(250_000n);
    expect(s.balance + s.held).toBe(s.ledger);
  });

  it('charges at most what was held, and releases holds whose owner died', async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 1_000_000n });
    const { key } = await makeKey(ctx.db, ws.id, { spendCap: 500_000n });
    const a = await billingRepository.reserve(ctx.db, {
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: 'same',
      amount: 100_000n,
      ttlMs: TTL,
    });
    expect(await billingRepository.settle(ctx.db, a.id, { cost: 999_999n })).toEqual({
      charged: 100_000n,
      balanceAfter: 900_000n,
    });
    // A caller may reuse its X-Request-Id: each reservation still gets its own charge.
    const b = await billingRepository.reserve(ctx.db, {
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: 'same',
      amount: 50_000n,
      ttlMs: -1,
    });
    expect(await billingRepository.releaseExpired(ctx.db)).toBe(1);
    expect(await billingRepository.settle(ctx.db, b.id, { cost: 1n })).toBeNull();
    const s = await state(ws.id, key.id);
    expect(s).toMatchObject({ balance: 900_000n, spent: 100_000n, reserved: 0n, held: 0n, ledger: 900_000n });
  });
});
