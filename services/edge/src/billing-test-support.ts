// Test support: a request's money as Postgres holds it. A hold is settled after the answer has been sent, so the
// checks wait for it to leave the held state; a call held against a budget lease (the chat routes) is charged in
// the leases' next group commit, so the checks wait for that.
import { billingRepository } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { LEASE_TTL_MS, type BudgetLeases } from './billing/budget-leases';
import { eventually, makeKey } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The reservation of a request once it is no longer held (settled or released), and the request's ledger entries. */
async function chargeOf(db: TestDb, requestId: string) {
  const reservation = await eventually(async () => {
    const r = await db.reservation.findFirst({ where: { requestId } });
    return r && r.state !== 'held' ? r : null;
  }, `the reservation of ${requestId} to settle`);
  return { reservation, entries: await db.ledgerEntry.findMany({ where: { requestId } }) };
}

export interface ExpectedCharge {
  workspaceId: string;
  model: string;
  prices: Parameters<typeof costOf>[0];
  usage: Usage;
}

/**
 * The ledger entries of a call held against a budget lease, once no lease counts anything held or pending: every
 * call of the test has ended (a stream whose caller left is still read to its end) and its charge is written.
 */
export async function leaseChargesOf(db: TestDb, leases: BudgetLeases, requestId: string) {
  await eventually(
    () => leases.snapshot().every((l) => l.committed === 0n),
    'every held call to end and its charge to be written',
  );
  await leases.flushed();
  return db.ledgerEntry.findMany({ where: { requestId } });
}

/**
 * A call held against a budget lease was not charged, and its hold was given back to the lease: once the leases
 * have written everything, no entry has its request id and no lease still counts anything held.
 */
export async function expectReleased(db: TestDb, leases: BudgetLeases, requestId: string | null) {
  expect(requestId).toBeTruthy();
  expect(await leaseChargesOf(db, leases, requestId!)).toEqual([]);
}

/**
 * The request was settled with exactly one charge: `usage` at the model's prices, booked to the workspace. With
 * `leases`, the call was held against a budget lease (no reservation of its own).
 */
export async function expectCharged(
  db: TestDb,
  requestId: string | null,
  charge: ExpectedCharge,
  leases?: BudgetLeases,
) {
  expect(requestId).toBeTruthy();
  let entries: Awaited<ReturnType<typeof leaseChargesOf>>;
  if (leases) {
    entries = await leaseChargesOf(db, leases, requestId!);
    expect(await db.reservation.count({ where: { requestId: requestId!, lease: false } })).toBe(0);
  } else {
    const settled = await chargeOf(db, requestId!);
    expect(settled.reservation.state).toBe('settled');
    entries = settled.entries;
  }
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({
    kind: 'charge',
    amount: -costOf(charge.prices, charge.usage),
    model: charge.model,
    inputTokens: charge.usage.inputTokens,
    outputTokens: charge.usage.outputTokens,
    workspaceId: charge.workspaceId,
  });
}

/** No money made or lost: the balance plus what is still held equals the ledger's total. */
export async function expectBalanced(db: TestDb, workspaceId: string) {
  const ws = await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const held = await db.reservation.aggregate({ where: { workspaceId, state: 'held' }, _sum: { amount: true } });
  expect(ws.balance + (held._sum.amount ?? 0n)).toBe(await billingRepository.ledgerTotal(db, workspaceId));
}

/**
 * A call's hold is exactly `amount` (the hold is in the edge's memory, not a row): served for a key capped at
 * `amount`, refused 402 for a key capped one micro-unit lower. `call` makes the call with a key and answers its status.
 */
export async function expectHoldOf(
  db: TestDb,
  workspaceId: string,
  amount: bigint,
  call: (secret: string) => Promise<number>,
) {
  const short = await makeKey(db, workspaceId, { spendCap: amount - 1n });
  expect(await call(short.secret)).toBe(402);
  const exact = await makeKey(db, workspaceId, { spendCap: amount });
  expect(await call(exact.secret)).toBe(200);
}

/** The HTTP status a call through an SDK ended with. */
export const statusOf = (p: Promise<unknown>): Promise<number> =>
  p.then(
    () => 200,
    (e: { status?: number }) => e.status ?? 0,
  );

/**
 * `callers` callers each calling `call` again and again, and the edge process SIGKILLed under that load once
 * `answered` calls have been answered 200 (a count, not a time: a loaded machine answers slower, not fewer; failing
 * if `deadlineMs` passes first); every answer it gave before dying (a call cut by the kill gives none). Afterwards
 * the dead edge's leases are released as at their expiry (billing.release-expired) and nothing of `workspaceId` is
 * held any more.
 */
export async function killUnderLoad(
  db: TestDb,
  workspaceId: string,
  edge: { child: { kill(signal: NodeJS.Signals): unknown }; stop(): Promise<unknown> },
  call: (n: number) => Promise<{ status: number; requestId: string }>,
  { callers = 32, answered, deadlineMs = 45_000 }: { callers?: number; answered: number; deadlineMs?: number },
): Promise<{ status: number; requestId: string }[]> {
  const answers: { status: number; requestId: string }[] = [];
  let stop = false;
  let ok = 0;
  let enough!: () => void;
  const reached = new Promise<void>((resolve) => (enough = resolve));
  const caller = async (w: number) => {
    for (let i = 0; !stop; i++) {
      try {
        const answer = await call(w * 100_000 + i);
        answers.push(answer);
        if (answer.status === 200 && ++ok === answered) enough();
      } catch {
        // the connection died with the edge
      }
    }
  };
  const load = Promise.all(Array.from({ length: callers }, (_, w) => caller(w)));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), deadlineMs)));
  const outcome = await Promise.race([reached, late]);
  clearTimeout(timer);
  if (outcome === 'late') {
    stop = true;
    edge.child.kill('SIGKILL');
    await edge.stop();
    await load;
    throw new Error(`only ${ok} of ${answered} calls answered 200 within ${deadlineMs} ms`);
  }
  edge.child.kill('SIGKILL');
  await edge.stop();
  stop = true;
  await load;
  // The dead replica's leases are held until their expiry; then billing.release-expired gives them back.
  expect(await billingRepository.releaseExpired(db, new Date(Date.now() + LEASE_TTL_MS + 1000))).toBeGreaterThan(0);
  expect(await db.reservation.count({ where: { workspaceId, state: 'held' } })).toBe(0);
  return answers;
}
