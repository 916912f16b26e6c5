import type { DbClient } from '../client';

// The two steps every change that could leave a workspace without an owner takes, inside its transaction: lock the
// workspace row, then count its owners. Membership changes and user deletions lock alike, so they serialise.

export async function lockWorkspace(tx: DbClient, workspaceId: string) {
  await tx.$queryRaw`SELECT id FROM "Workspace" WHERE id = ${workspaceId} FOR UPDATE`;
}

export async function ownerCount(tx: DbClient, workspaceId: string) {
  return tx.membership.count({ where: { workspaceId, role: 'owner' } });
}
