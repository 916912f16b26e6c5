// Workspace roles (spec §5.6, DESIGN.md §4): owner ⊃ admin ⊃ member. The rules are data here; the edge applies them
// to sessions (the person's role) and to keys (their creator's role), the dashboard only shows what they allow.

export type WorkspaceRole = 'owner' | 'admin' | 'member';

const RANK: Record<WorkspaceRole, number> = { member: 0, admin: 1, owner: 2 };

export const roleAtLeast = (role: WorkspaceRole, needed: WorkspaceRole): boolean => RANK[role] >= RANK[needed];

/** The role each guarded operation needs, and how an error names the operation. */
export const ROLE_RULES = {
  manageAllKeys: { needed: 'admin', what: "manage other people's API keys" },
  rotateCliKeys: { needed: 'owner', what: 'rotate a key made by the platform CLI' },
  manageMembers: { needed: 'admin', what: 'manage members' },
  deleteFiles: { needed: 'admin', what: 'delete files and generated outputs' },
  deleteProjects: { needed: 'admin', what: 'delete a saved project' },
  redeliver: { needed: 'admin', what: 'redeliver callbacks' },
  callbackSecret: { needed: 'admin', what: 'read or rotate the callback signing secret' },
  manageOwners: { needed: 'owner', what: 'make, demote or remove an owner' },
} as const satisfies Record<string, { needed: WorkspaceRole; what: string }>;

export type RoleRule = keyof typeof ROLE_RULES;

/** The rule a change of a member's role from `from` to `to` falls under (null: adding or removing). */
export const membershipRule = (from: WorkspaceRole | null, to: WorkspaceRole | null): RoleRule =>
  from === 'owner' || to === 'owner' ? 'manageOwners' : 'manageMembers';

/** A key as the rules below read it: who made it and where. */
export interface KeyOrigin {
  creatorId: string | null;
  createdVia: 'dashboard' | 'cli' | 'cli_for_member';
}

/**
 * Who may give a key a new secret, which goes to whoever rotates: its creator only, so no one (an admin neither)
 * takes another person's key into their own hands; a key the CLI made without a creator, owners. A key whose creator
 * was deleted is rotated by no one (it no longer works; it can be revoked).
 */
export function keyRotation(
  person: { userId: string; role: WorkspaceRole },
  key: KeyOrigin,
): 'ok' | RoleRule | 'creator' {
  if (key.createdVia === 'cli')
    return roleAtLeast(person.role, ROLE_RULES.rotateCliKeys.needed) ? 'ok' : 'rotateCliKeys';
  return key.creatorId === person.userId ? 'ok' : 'creator';
}

/** Who may revoke a key: its creator, and admins and owners any key of the workspace. */
export const mayRevokeKey = (person: { userId: string; role: WorkspaceRole }, key: KeyOrigin): boolean =>
  key.creatorId === person.userId || roleAtLeast(person.role, ROLE_RULES.manageAllKeys.needed);

/** What the person may do, for the dashboard to show (the edge still decides every request). */
export function permissionsOf(role: WorkspaceRole) {
  const may = (rule: RoleRule) => roleAtLeast(role, ROLE_RULES[rule].needed);
  return {
    manage_all_keys: may('manageAllKeys'),
    manage_members: may('manageMembers'),
    manage_owners: may('manageOwners'),
    delete_files: may('deleteFiles'),
    delete_projects: may('deleteProjects'),
    redeliver: may('redeliver'),
    callback_secret: may('callbackSecret'),
  };
}
