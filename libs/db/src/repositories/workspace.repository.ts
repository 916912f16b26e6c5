import { queryPrepared, withTx, type DbClient } from '../client';
import type { Tier } from '../generated/prisma/enums';
import { newId } from '../ids';

export interface CreateWorkspaceInput {
  name: string;
  tier: Tier;
  balance?: bigint;
  retentionDays?: number | null;
}

export const workspaceRepository = {
  /**
   * Creates the workspace; an opening balance is booked as a top-up, in the same transaction, so the ledger always
   * sums to the balance and a failure leaves no workspace behind.
   */
  create(db: DbClient, input: CreateWorkspaceInput) {
    return withTx(db, async (tx) => {
      const workspace = await tx.workspace.create({
        data: { id: newId('ws'), name: input.name, tier: input.tier, retentionDays: input.retentionDays ?? null },
      });
      if (!input.balance || input.balance <= 0n) return workspace;
      const balance = await workspaceRepository.topUp(tx, workspace.id, input.balance, 'opening balance');
      return { ...workspace, balance: balance! };
    });
  },

  list(db: DbClient) {
    return db.workspace.findMany({ orderBy: { createdAt: 'asc' } });
  },

  get(db: DbClient, id: string) {
    return db.workspace.findUnique({ where: { id } });
  },

  /**
   * The balance as its owner reads it. Workspace.balance leaves out every hold, including the blocks edge replicas
   * lease to serve calls from memory: those are the replicas' bookkeeping, not a commitment the owner
   * made, so what they still hold unspent is counted back in — the owner sees the same balance however many replicas
   * hold a block. Holds of the owner's own calls and tasks in flight stay out, as before leases: that money is
   * committed (a running task's bound), and a call beyond it is refused. null when there is no such workspace.
   */
  async ownerBalance(db: DbClient, id: string): Promise<bigint | null> {
    const [row] = await queryPrepared<{ amount: string }>(
      db,
      'workspace_owner_balance',
      `SELECT (w."balance" + COALESCE((SELECT SUM(r."amount") FROM "Reservation" r
                                       WHERE r."workspaceId" = w."id" AND r."lease" AND r."state" = 'held'), 0))::text
              AS amount
         FROM "Workspace" w WHERE w."id" = $1`,
      [id],
    );
    return row ? BigInt(row.amount) : null;
  },

  /** Changes the given settings (never the balance: that moves through the ledger); null without such a workspace. */
  async update(
    db: DbClient,
    id: string,
    patch: { name?: string; tier?: Tier; rpm?: number; uploadRpm?: number; retentionDays?: number | null },
  ) {
    const { count } = await db.workspace.updateMany({ where: { id }, data: patch });
    return count ? db.workspace.findUnique({ where: { id } }) : null;
  },

  /** Adds to the balance and writes its ledger entry in one statement: the new balance, null without the workspace. */
  async topUp(db: DbClient, workspaceId: string, amount: bigint, note: string | null = null): Promise<bigint | null> {
    const rows = await db.$queryRaw<{ balanceAfter: bigint }[]>`
      WITH w AS (
        UPDATE "Workspace" SET balance = balance + ${amount} WHERE id = ${workspaceId} RETURNING balance
      )
      INSERT INTO "LedgerEntry" (id, "workspaceId", kind, amount, "balanceAfter", note)
      SELECT ${newId('led')}, ${workspaceId}, 'topup', ${amount}, w.balance, ${note} FROM w
      RETURNING "balanceAfter"`;
    return rows[0]?.balanceAfter ?? null;
  },
};
