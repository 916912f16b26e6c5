import { newApiKey, SCOPES } from '@gensvc/auth';
import { apiKeyRepository, workspaceRepository, type Db, type Tier } from '@gensvc/db';

export async function makeWorkspace(db: Db, over: { name?: string; tier?: Tier; balance?: bigint } = {}) {
  return workspaceRepository.create(db, { name: over.name ?? 'Test workspace', tier: over.tier ?? 'payg', balance: over.balance ?? 10_000_000n });
}

export interface KeyOptions {
  scopes?: string[];
  spendCap?: bigint | null;
  spent?: bigint;
  expiresAt?: Date | null;
  revoked?: boolean;
  name?: string;
}

/** A key and its secret (the secret exists only here, as for a real caller). */
export async function makeKey(db: Db, workspaceId: string, options: KeyOptions = {}) {
  const k = newApiKey();
  let key = await apiKeyRepository.create(db, {
    workspaceId,
    name: options.name ?? 'test key',
    prefix: k.prefix,
    hash: k.hash,
    scopes: options.scopes ?? [...SCOPES],
    spendCap: options.spendCap ?? null,
    expiresAt: options.expiresAt ?? null,
  });
  if (options.spent !== undefined || options.revoked) {
    key = await db.apiKey.update({
      where: { id: key.id },
      data: { spent: options.spent ?? 0n, revokedAt: options.revoked ? new Date() : null },
    });
  }
  return { key, secret: k.secret };
}
