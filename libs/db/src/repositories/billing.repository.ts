import { errors, type AppError } from '@gensvc/errors';
import { queryPrepared, type DbClient } from '../client';
import { newId } from '../ids';

const RESERVE = 'SELECT gensvc_reserve($1, $2, $3, $4, $5::bigint, $6::timestamp(3)) AS outcome';
const SETTLE =
  'SELECT charged::text, balance_after::text FROM gensvc_settle($1, $2::bigint, $3, $4, $5::integer, $6::integer, $7)';
const RELEASE = 'SELECT gensvc_release($1) AS released';
const LEASE =
  'SELECT outcome, amount::text FROM gensvc_lease($1, $2, $3, $4, $5::bigint, $6::bigint, $7::timestamp(3))';
const LEASE_CHARGE = 'SELECT id, charged FROM gensvc_lease_charge($1::jsonb, $2::timestamp(3))';
// One charge (every flush at low load) as one plain statement, without the function's JSON and plpgsql: the lease's
// UPDATE takes its row lock (then the key's: the function's lock order) and pays only when the lease is held, holds
// the cost and the entry is not in the ledger yet; the entry and the key's counters follow from the same CTE, so
// all three are written or none. A retry racing an earlier try of the same entry fails on the ledger's primary key
// and is retried (then answered charged), as the batched form does. It leaves the lease's expiry alone
// (BudgetLeases.tick renews live leases): the lease row's UPDATE then changes no indexed column and stays a HOT update.
const LEASE_CHARGE_ONE = `
WITH l AS (
  UPDATE "Reservation" res SET "amount" = res."amount" - $3::bigint
   WHERE res."id" = $2 AND res."state" = 'held' AND res."amount" >= $3::bigint
     AND NOT EXISTS (SELECT 1 FROM "LedgerEntry" le WHERE le."id" = $1)
  RETURNING res."workspaceId", res."apiKeyId"
), ins AS (
  INSERT INTO "LedgerEntry" ("id", "workspaceId", "apiKeyId", "kind", "amount", "balanceAfter", "requestId", "model",
                             "inputTokens", "outputTokens")
  SELECT $1, l."workspaceId", l."apiKeyId", 'charge', -$3::bigint,
         (SELECT ws."balance" FROM "Workspace" ws WHERE ws."id" = l."workspaceId"),
         $4, $5, $6::integer, $7::integer
    FROM l
), k AS (
  UPDATE "ApiKey" SET "reserved" = "ApiKey"."reserved" - $3::bigint, "spent" = "ApiKey"."spent" + $3::bigint
    FROM l WHERE "ApiKey"."id" = l."apiKeyId"
)
SELECT EXISTS (SELECT 1 FROM l) OR EXISTS (SELECT 1 FROM "LedgerEntry" le WHERE le."id" = $1) AS charged`;
const LEASE_RETURN = 'SELECT gensvc_lease_return($1, $2::bigint)::text AS returned';
const LEASE_RENEW = 'SELECT gensvc_lease_renew($1::text[], $2::timestamp(3)) AS renewed';

/**
 * An ISO time with Z cast to timestamp keeps its UTC wall time, as Prisma stores DateTime, whatever the session's zone.
 */
const expiryIn = (ms: number) => new Date(Date.now() + ms).toISOString();

export interface LeaseInput {
  workspaceId: string;
  apiKeyId: string | null;
  /** The request that asked for the lease (for the record). */
  requestId: string;
  /** Refused (402) below this: the call that needs the lease. */
  min: bigint;
  /** As much as this, when the cap and the balance allow. */
  want: bigint;
  ttlMs: number;
}

/** One call's charge against a lease; `id` becomes the ledger entry's id (a retried batch charges nothing twice). */
export interface LeaseCharge {
  id: string;
  lease: string;
  cost: bigint;
  requestId: string;
  model?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
}

export interface ReserveInput {
  workspaceId: string;
  /** The key whose spend cap the hold counts against; null for work not paid through a key. */
  apiKeyId: string | null;
  /** The request id the caller saw, carried into the ledger. */
  requestId: string;
  /** Upper bound of the cost, in micro-units. */
  amount: bigint;
  /** A hold left by a process that died is given back after this long (releaseExpired). */
  ttlMs: number;
}

export interface SettleInput {
  cost: bigint;
  model?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  taskId?: string | null;
}

/**
 * Money moves only through the SQL functions of the billing migrations, each a single atomic round trip: reserve
 * before calling upstream, then settle to the real cost or release. Exact under any concurrency: the conditional
 * updates run under row locks, so a key's spent + reserved never passes its cap and a balance never goes below zero.
 */
/** A hold's answer (gensvc_reserve, gensvc_lease, gensvc_task_create_many): null on 'ok', else the 402 it names. */
export function refusalOf(outcome: string | undefined, fn = 'gensvc_reserve'): AppError | null {
  switch (outcome) {
    case 'ok':
      return null;
    case 'spending_cap_exhausted':
      return errors.spendingCapExhausted();
    case 'insufficient_balance':
      return errors.insufficientBalance();
    default:
      throw new Error(`${fn} answered ${JSON.stringify(outcome)}`);
  }
}

/** A hold's answer: returns on 'ok', else throws the 402 it names (refusalOf). */
export function assertHeld(outcome: string | undefined, fn = 'gensvc_reserve'): void {
  const refusal = refusalOf(outcome, fn);
  if (refusal) throw refusal;
}

export const billingRepository = {
  /** Holds `amount`; throws 402 spending_cap_exhausted or insufficient_balance when it cannot. */
  async reserve(db: DbClient, input: ReserveInput): Promise<{ id: string; amount: bigint }> {
    if (input.amount < 0n) throw new Error('A reservation cannot be negative.');
    const id = newId('res');
    // An ISO time with Z cast to timestamp keeps its UTC wall time (as Prisma stores DateTime) in any session zone.
    const expires = new Date(Date.now() + input.ttlMs).toISOString();
    const [row] = await queryPrepared<{ outcome: string }>(db, 'gensvc_reserve', RESERVE, [
      id,
      input.workspaceId,
      input.apiKeyId,
      input.requestId,
      input.amount.toString(),
      expires,
    ]);
    assertHeld(row?.outcome);
    return { id, amount: input.amount };
  },

  /**
   * Charges min(cost, held) with one ledger entry and gives back the rest. Idempotent: null when the reservation
   * was already settled or released, so a retried settlement never charges twice.
   */
  async settle(
    db: DbClient,
    reservationId: string,
    input: SettleInput,
  ): Promise<{ charged: bigint; balanceAfter: bigint } | null> {
    const [row] = await queryPrepared<{ charged: bigint | string; balance_after: bigint | string }>(
      db,
      'gensvc_settle',
      SETTLE,
      [
        reservationId,
        input.cost.toString(),
        newId('led'),
        input.model ?? null,
        input.inputTokens ?? null,
        input.outputTokens ?? null,
        input.taskId ?? null,
      ],
    );
    return row ? { charged: BigInt(row.charged), balanceAfter: BigInt(row.balance_after) } : null;
  },

  /** Gives the hold back in full; false when it was no longer held. */
  async release(db: DbClient, reservationId: string): Promise<boolean> {
    const [row] = await queryPrepared<{ released: boolean }>(db, 'gensvc_release', RELEASE, [reservationId]);
    return row?.released === true;
  },

  /**
   * Opens a budget lease: moves between `min` and `want` from the key's cap and the workspace's balance
   * into a held reservation the caller reserves calls against in memory. Throws 402 when not even `min` is there.
   */
  async lease(db: DbClient, input: LeaseInput): Promise<{ id: string; amount: bigint }> {
    const id = newId('res');
    const [row] = await queryPrepared<{ outcome: string; amount: string }>(db, 'gensvc_lease', LEASE, [
      id,
      input.workspaceId,
      input.apiKeyId,
      input.requestId,
      input.min.toString(),
      input.want.toString(),
      expiryIn(input.ttlMs),
    ]);
    assertHeld(row?.outcome, 'gensvc_lease');
    return { id, amount: BigInt(row!.amount) };
  },

  /**
   * Writes a batch of charges against leases in one statement (group commit). Returns the ids of the entries charged
   * (now or by an earlier try of the same batch). A batch of several also pushes its leases' expiry to `ttlMs` from
   * now; a lone charge does not (renewLeases keeps live leases alive).
   */
  async chargeLeases(db: DbClient, charges: readonly LeaseCharge[], ttlMs: number): Promise<Set<string>> {
    if (charges.length === 1) {
      const c = charges[0]!;
      const cost = c.cost < 0n ? 0n : c.cost;
      const [row] = await queryPrepared<{ charged: boolean }>(db, 'gensvc_lease_charge_one', LEASE_CHARGE_ONE, [
        c.id,
        c.lease,
        cost.toString(),
        c.requestId,
        c.model ?? null,
        c.inputTokens ?? null,
        c.outputTokens ?? null,
      ]);
      return new Set(row?.charged ? [c.id] : []);
    }
    const entries = charges.map((c) => ({
      id: c.id,
      lease: c.lease,
      cost: c.cost.toString(),
      request: c.requestId,
      model: c.model ?? null,
      input: c.inputTokens ?? null,
      output: c.outputTokens ?? null,
    }));
    const rows = await queryPrepared<{ id: string; charged: boolean }>(db, 'gensvc_lease_charge', LEASE_CHARGE, [
      JSON.stringify(entries),
      expiryIn(ttlMs),
    ]);
    return new Set(rows.filter((r) => r.charged).map((r) => r.id));
  },

  /** Gives up to `amount` of what the lease still holds back; returns what was given back. */
  async returnLease(db: DbClient, leaseId: string, amount: bigint): Promise<bigint> {
    const [row] = await queryPrepared<{ returned: string }>(db, 'gensvc_lease_return', LEASE_RETURN, [
      leaseId,
      amount.toString(),
    ]);
    return BigInt(row?.returned ?? 0);
  },

  /** Pushes the expiry of live leases `ttlMs` ahead; returns how many are still held. */
  async renewLeases(db: DbClient, leaseIds: readonly string[], ttlMs: number): Promise<number> {
    if (leaseIds.length === 0) return 0;
    const [row] = await queryPrepared<{ renewed: number }>(db, 'gensvc_lease_renew', LEASE_RENEW, [
      leaseIds,
      expiryIn(ttlMs),
    ]);
    return Number(row?.renewed ?? 0);
  },

  /** Releases holds whose owner died before settling (their expiry passed); returns how many. */
  async releaseExpired(db: DbClient, now = new Date(), batch = 500): Promise<number> {
    const rows = await db.$queryRaw<{ released: boolean }[]>`
      SELECT gensvc_release(id) AS released FROM "Reservation"
       WHERE state = 'held' AND "expiresAt" < ${now}::timestamp(3)
       ORDER BY "expiresAt" LIMIT ${batch}`;
    return rows.filter((r) => r.released).length;
  },

  /** The workspace's ledger total: equals balance + held reservations (the billing invariant). */
  async ledgerTotal(db: DbClient, workspaceId: string): Promise<bigint> {
    const agg = await db.ledgerEntry.aggregate({ where: { workspaceId }, _sum: { amount: true } });
    return agg._sum.amount ?? 0n;
  },
};
