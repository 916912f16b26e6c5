// How long files live (spec §8, DESIGN.md §4 "Retention"). Uploads: 30 days. A generated output has two lives: its
// public copy on {file_url}, kept by tier, and its workspace-library entry, which lives 30 days or until the public
// copy goes, whichever is first. The row is hidden from the library at `expiresAt`; row and bytes are removed once
// both lives are over (fileRepository.purgeable).
import { plusDays } from './days';
import type { Tier } from './generated/prisma/enums';

export const UPLOAD_RETENTION_DAYS = 30;
export const LIBRARY_RETENTION_DAYS = 30;
/** A file let go by its last saved project after its retention ended lives this long from that moment. */
export const RELEASE_GRACE_DAYS = 7;
export const PUBLIC_RETENTION_DAYS: Record<Tier, number> = { free: 7, payg: 90, team: 365, enterprise: 365 };

/** Days a generated output's public copy is kept: by tier; Enterprise takes the workspace's own setting when set. */
export function publicRetentionDays(tier: Tier, workspaceRetentionDays?: number | null): number {
  if (tier === 'enterprise' && workspaceRetentionDays != null && workspaceRetentionDays > 0)
    return workspaceRetentionDays;
  return PUBLIC_RETENTION_DAYS[tier];
}

export interface FileExpiry {
  /** When the library entry disappears (hidden from lists and look-ups). */
  expiresAt: Date;
  /** When the public copy goes; null for uploads, which have none. */
  publicExpiresAt: Date | null;
}

export function uploadExpiry(createdAt: Date): FileExpiry {
  return { expiresAt: plusDays(createdAt, UPLOAD_RETENTION_DAYS), publicExpiresAt: null };
}

export function generatedExpiry(createdAt: Date, tier: Tier, workspaceRetentionDays?: number | null): FileExpiry {
  const publicExpiresAt = plusDays(createdAt, publicRetentionDays(tier, workspaceRetentionDays));
  const library = plusDays(createdAt, LIBRARY_RETENTION_DAYS);
  return { expiresAt: library.getTime() < publicExpiresAt.getTime() ? library : publicExpiresAt, publicExpiresAt };
}
