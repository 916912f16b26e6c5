// Test support: a request's money as Postgres holds it. A hold is settled after the answer has been sent, so the
// checks wait for it to leave the held state.
import { billingRepository, type Db } from '@gensvc/db';
import { eventually } from '@gensvc/testing';
import { costOf } from '@gensvc/upstream';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The reservation of a request once it is no longer held (settled or released), and the request's ledger entries. */
export async function chargeOf(db: Db, requestId: string) {
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

/** The request was settled with exactly one charge: `usage` at the model's prices, booked to the workspace. */
export async function expectCharged(db: Db, requestId: string | null, charge: ExpectedCharge) {
  expect(requestId).toBeTruthy();
  const { reservation, entries } = await chargeOf(db, requestId!);
  expect(reservation.state).toBe('settled');
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({
    kind: 'charge',
    amount: -costOf(charge.prices, charge.usage),
    model: charge.model,
    inputTokens: charge.usage.inputTokens,
    outputTokens: charge.usage.outputTokens,
    workspaceId: charge.workspaceId,
  });
  return reservation;
}

/** No money made or lost: the balance plus what is still held equals the ledger's total. */
export async function expectBalanced(db: Db, workspaceId: string) {
  const ws = await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const held = await db.reservation.aggregate({ where: { workspaceId, state: 'held' }, _sum: { amount: true } });
  expect(ws.balance + (held._sum.amount ?? 0n)).toBe(await billingRepository.ledgerTotal(db, workspaceId));
}
