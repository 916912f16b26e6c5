// gensvc_lease_charge as a table: the same batches against the current function and against its first (entry by
// entry) version, which is created here from its migration under another name. Both must answer the table and leave
// the same books: retried entries reported charged and not applied again, a lease that pays only some entries, two
// leases of two keys, a released lease, and the invariants after every batch.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { MIGRATIONS_DIR } from '../migrate';
import { billingRepository } from './billing.repository';

const ctx = useTestContext();
const FIRST = 'gensvc_lease_charge_first';

beforeAll(async () => {
  const sql = readFileSync(join(MIGRATIONS_DIR, '20261124010000_budget_leases', 'migration.sql'), 'utf8');
  const fn = /CREATE FUNCTION gensvc_lease_charge\(.*?\nEND \$\$;/s.exec(sql)?.[0];
  if (!fn) throw new Error('gensvc_lease_charge not found in the budget_leases migration');
  await ctx.db.$executeRawUnsafe(fn.replace('CREATE FUNCTION gensvc_lease_charge(', `CREATE FUNCTION ${FIRST}(`));
});

type Entry = [id: string, lease: 'A' | 'B' | 'R', cost: number];

async function setup(fn: string) {
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000n });
  const { key: a } = await makeKey(ctx.db, ws.id, { spendCap: 500_000n });
  const { key: b } = await makeKey(ctx.db, ws.id, { spendCap: null });
  const lease = (apiKeyId: string, want: bigint) =>
    billingRepository.lease(ctx.db, { workspaceId: ws.id, apiKeyId, requestId: 'r', min: want, want, ttlMs: 1_000 });
  const leases = { A: await lease(a.id, 10_000n), B: await lease(b.id, 5_000n), R: await lease(a.id, 2_000n) };
  // R: given back whole (released), as a dead replica's lease is.
  expect(await billingRepository.returnLease(ctx.db, leases.R.id, 2_000n)).toBe(2_000n);

  const charge = async (entries: Entry[]) => {
    const json = entries.map(([id, l, cost]) => ({
      id: `${fn}_${id}`,
      lease: leases[l].id,
      cost: String(cost),
      request: `req_${id}`,
      model: 'sim/eval-1',
      input: 3,
      output: 4,
    }));
    const rows = await ctx.db.$queryRawUnsafe<{ id: string; charged: boolean }[]>(
      `SELECT id, charged FROM ${fn}($1::jsonb, $2::timestamp(3))`,
      JSON.stringify(json),
      new Date(Date.now() + 60_000).toISOString(),
    );
    return rows.map((r) => `${r.id.slice(fn.length + 1)}:${r.charged ? 'charged' : 'not'}`);
  };

  const books = async () => {
    const w = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
    const res = await ctx.db.reservation.findMany({ where: { workspaceId: ws.id } });
    const held = res.filter((r) => r.state === 'held').reduce((s, r) => s + r.amount, 0n);
    const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id }, orderBy: { id: 'asc' } });
    const keys = await ctx.db.apiKey.findMany({ where: { id: { in: [a.id, b.id] } } });
    // The invariants: balance + held = Σ ledger; each key's spent = Σ its charges; spent + reserved ≤ cap.
    expect(w.balance + held).toBe(ledger.reduce((s, e) => s + e.amount, 0n));
    for (const k of keys) {
      expect(k.spent).toBe(
        -ledger.filter((e) => e.apiKeyId === k.id && e.kind === 'charge').reduce((s, e) => s + e.amount, 0n),
      );
      if (k.spendCap !== null) expect(k.spent + k.reserved).toBeLessThanOrEqual(k.spendCap);
    }
    const byId = (id: string) => res.find((r) => r.id === id)!;
    return {
      balance: w.balance,
      A: `${byId(leases.A.id).state} ${byId(leases.A.id).amount}`,
      B: `${byId(leases.B.id).state} ${byId(leases.B.id).amount}`,
      R: `${byId(leases.R.id).state} ${byId(leases.R.id).amount}`,
      keyA: keys.find((k) => k.id === a.id)!.spent,
      keyB: keys.find((k) => k.id === b.id)!.spent,
      charges: ledger
        .filter((e) => e.kind === 'charge')
        .map((e) => `${e.id.slice(fn.length + 1)} ${e.amount} ${e.requestId} ${e.inputTokens}/${e.outputTokens}`),
    };
  };
  return { charge, books, leases };
}

describe.each([FIRST, 'gensvc_lease_charge'])('%s', (fn) => {
  it('answers the table and keeps the books', async () => {
    const { charge, books } = await setup(fn);
    const start = await books();
    expect(start).toMatchObject({
      balance: 985_000n,
      A: 'held 10000',
      B: 'held 5000',
      R: 'released 0',
      keyA: 0n,
      keyB: 0n,
    });

    // Two leases of two keys; A pays e1 and e3, then holds 3000: not e5 (5000), yet e6 (2000) after it; R is released.
    const first: Entry[] = [
      ['e1', 'A', 3_000],
      ['e2', 'B', 2_000],
      ['e3', 'A', 4_000],
      ['e4', 'R', 100],
      ['e5', 'A', 5_000],
      ['e6', 'A', 2_000],
    ];
    expect(await charge(first)).toEqual(['e1:charged', 'e2:charged', 'e3:charged', 'e4:not', 'e5:not', 'e6:charged']);
    expect(await books()).toMatchObject({
      balance: 985_000n,
      A: 'held 1000',
      B: 'held 3000',
      keyA: 9_000n,
      keyB: 2_000n,
    });

    // The same batch again (its outcome was unknown), with new entries, one of them twice: nothing charged twice.
    expect(await charge([...first, ['e7', 'B', 1_000], ['e7', 'B', 1_000]])).toEqual([
      'e1:charged',
      'e2:charged',
      'e3:charged',
      'e4:not',
      'e5:not',
      'e6:charged',
      'e7:charged',
      'e7:charged',
    ]);
    expect(await books()).toMatchObject({ A: 'held 1000', B: 'held 2000', keyA: 9_000n, keyB: 3_000n });

    // Every lease pays all its entries (the common case), one entry twice; a negative cost charges 0.
    const paid: Entry[] = [
      ['e8', 'A', 500],
      ['e9', 'B', 500],
      ['e10', 'A', 500],
      ['e11', 'B', -5],
      ['e9', 'B', 500],
    ];
    expect(await charge(paid)).toEqual(['e8:charged', 'e9:charged', 'e10:charged', 'e11:charged', 'e9:charged']);
    expect(await books()).toMatchObject({ A: 'held 0', B: 'held 1500', keyA: 10_000n, keyB: 3_500n });
    // Retried once the lease is spent: still charged (found), nothing applied.
    expect(await charge(paid)).toEqual(['e8:charged', 'e9:charged', 'e10:charged', 'e11:charged', 'e9:charged']);

    // A lease that pays only the first k entries of a batch.
    expect(
      await charge([
        ['e12', 'B', 1_000],
        ['e13', 'B', 1_000],
        ['e14', 'B', 1_000],
      ]),
    ).toEqual(['e12:charged', 'e13:not', 'e14:not']);
    expect(await charge([])).toEqual([]);
    // A batch of one (the function still answers one; the edge sends a lone charge as LEASE_CHARGE_ONE), retried; one
    // on the released lease.
    expect(await charge([['e15', 'B', 100]])).toEqual(['e15:charged']);
    expect(await charge([['e15', 'B', 100]])).toEqual(['e15:charged']);
    expect(await charge([['e16', 'R', 1]])).toEqual(['e16:not']);
    const end = await books();
    expect(end).toMatchObject({
      balance: 985_000n,
      A: 'held 0',
      B: 'held 400',
      R: 'released 0',
      keyA: 10_000n,
      keyB: 4_600n,
    });
    expect(end.charges).toEqual(
      [
        'e1 -3000',
        'e10 -500',
        'e11 0',
        'e12 -1000',
        'e15 -100',
        'e2 -2000',
        'e3 -4000',
        'e6 -2000',
        'e7 -1000',
        'e8 -500',
        'e9 -500',
      ].map((c) => `${c} req_${c.split(' ')[0]} 3/4`),
    );
  });
});

it('charges batches racing over two leases of two keys in any order: no deadlock, no double charge', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  const keys = [(await makeKey(ctx.db, ws.id, { spendCap: 1_000_000n })).key, (await makeKey(ctx.db, ws.id)).key];
  const leases = await Promise.all(
    [0, 1, 0, 1].map((k) =>
      billingRepository.lease(ctx.db, {
        workspaceId: ws.id,
        apiKeyId: keys[k]!.id,
        requestId: 'r',
        min: 100_000n,
        want: 100_000n,
        ttlMs: 60_000,
      }),
    ),
  );
  // 40 batches of 8, each over the four leases in its own order, sent twice each (a retry racing its first try).
  const batches = Array.from({ length: 40 }, (_, b) =>
    Array.from({ length: 8 }, (_, i) => ({
      id: `race_${b}_${i}`,
      lease: leases[(b + i * (b % 3 === 0 ? 3 : 1)) % 4]!.id,
      cost: 1_000n,
      requestId: `req_${b}_${i}`,
    })),
  );
  const answers = await Promise.all(
    [...batches, ...batches].map((batch) => billingRepository.chargeLeases(ctx.db, batch, 60_000)),
  );
  expect(answers.every((a) => a.size === 8)).toBe(true);
  const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
  expect(ledger).toHaveLength(320);
  const held = await ctx.db.reservation.aggregate({
    where: { workspaceId: ws.id, state: 'held' },
    _sum: { amount: true },
  });
  expect(held._sum.amount).toBe(400_000n - 320_000n);
  const w = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
  expect(w.balance + held._sum.amount!).toBe(10_000_000n - 320_000n);
  for (const k of await ctx.db.apiKey.findMany({ where: { id: { in: keys.map((k) => k.id) } } })) {
    expect(k.spent).toBe(-ledger.filter((e) => e.apiKeyId === k.id).reduce((s, e) => s + e.amount, 0n));
    expect(k.spent + k.reserved).toBe(200_000n);
  }
});

it('charges a lone entry with the plain statement: once, only from a held lease that covers it', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000n });
  const { key } = await makeKey(ctx.db, ws.id, { spendCap: 500_000n });
  const lease = (want: bigint) =>
    billingRepository.lease(ctx.db, {
      workspaceId: ws.id,
      apiKeyId: key.id,
      requestId: 'r',
      min: want,
      want,
      ttlMs: 1_000,
    });
  const A = await lease(10_000n);
  const R = await lease(2_000n);
  expect(await billingRepository.returnLease(ctx.db, R.id, 2_000n)).toBe(2_000n);
  const one = (id: string, leaseId: string, cost: bigint) =>
    billingRepository
      .chargeLeases(
        ctx.db,
        [{ id, lease: leaseId, cost, requestId: `req_${id}`, model: 'sim/chat-1', inputTokens: 3, outputTokens: 4 }],
        60_000,
      )
      .then((s) => s.has(id));

  expect(await one('s1', A.id, 3_000n)).toBe(true);
  expect(await one('s1', A.id, 3_000n)).toBe(true); // a retry: answered charged, not applied again
  expect(await one('s2', A.id, 8_000n)).toBe(false); // more than the lease still holds (7 000)
  expect(await one('s3', R.id, 100n)).toBe(false); // a released lease
  expect(await one('s4', A.id, 7_000n)).toBe(true); // exactly what it holds
  expect(await one('s4', R.id, 7_000n)).toBe(true); // charged before, whatever lease a retry names

  // A retry racing its first try: one of them may fail on the ledger's key (the edge retries it), never charge twice.
  const race = Array.from({ length: 20 }, (_, i) => `race1_${i}`);
  const B = await lease(40_000n);
  const retrying = async (id: string) => {
    for (;;) {
      try {
        return await one(id, B.id, 1_000n);
      } catch {
        /* the racing try won: retried, as BudgetLeases.write() does */
      }
    }
  };
  expect(await Promise.all([...race, ...race].map(retrying))).toEqual(Array(40).fill(true));

  const ledger = await ctx.db.ledgerEntry.findMany({
    where: { workspaceId: ws.id, kind: 'charge' },
    orderBy: { id: 'asc' },
  });
  expect(
    ledger.map((e) => `${e.id} ${e.amount} ${e.requestId} ${e.model} ${e.inputTokens}/${e.outputTokens}`).slice(-2),
  ).toEqual(['s1 -3000 req_s1 sim/chat-1 3/4', 's4 -7000 req_s4 sim/chat-1 3/4']);
  expect(ledger).toHaveLength(22);
  const res = await ctx.db.reservation.findMany({ where: { workspaceId: ws.id } });
  const byId = (id: string) => res.find((r) => r.id === id)!;
  expect([byId(A.id).amount, byId(R.id).amount, byId(B.id).amount]).toEqual([0n, 0n, 20_000n]);
  const w = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
  const held = res.filter((r) => r.state === 'held').reduce((s, r) => s + r.amount, 0n);
  expect(w.balance + held).toBe(ledger.reduce((s, e) => s + e.amount, 0n) + 1_000_000n);
  const k = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
  expect(k.spent).toBe(30_000n);
  expect(k.spent + k.reserved).toBe(50_000n);
});

it("leaves a lease's expiry to its renewal for one entry (a HOT update), and pushes it for a batch", async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000n });
  const { key } = await makeKey(ctx.db, ws.id);
  const lease = await billingRepository.lease(ctx.db, {
    workspaceId: ws.id,
    apiKeyId: key.id,
    requestId: 'r',
    min: 100_000n,
    want: 100_000n,
    ttlMs: 1_000,
  });
  const expiry = async () =>
    (await ctx.db.reservation.findUniqueOrThrow({ where: { id: lease.id } })).expiresAt.getTime();
  const opened = await expiry();
  const entry = (id: string) => ({ id, lease: lease.id, cost: 1_000n, requestId: `req_${id}` });
  expect(await billingRepository.chargeLeases(ctx.db, [entry('exp_1')], 60_000)).toEqual(new Set(['exp_1']));
  expect(await expiry()).toBe(opened);
  expect(await billingRepository.renewLeases(ctx.db, [lease.id], 60_000)).toBe(1);
  const renewed = await expiry();
  expect(renewed).toBeGreaterThan(opened + 50_000);
  expect(await billingRepository.chargeLeases(ctx.db, [entry('exp_2'), entry('exp_3')], 120_000)).toEqual(
    new Set(['exp_2', 'exp_3']),
  );
  expect(await expiry()).toBeGreaterThan(renewed + 50_000);
  const res = await ctx.db.reservation.findUniqueOrThrow({ where: { id: lease.id } });
  expect(res.amount).toBe(97_000n);
});
