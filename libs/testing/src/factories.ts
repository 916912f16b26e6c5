import { hashPassword, newApiKey, SCOPES } from '@gensvc/auth';
import {
  apiKeyRepository,
  newId,
  taskRepository,
  userRepository,
  workspaceRepository,
  type CreateTaskInput,
  type Role,
  type TaskRow,
  type Tier,
} from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';

export async function makeWorkspace(db: TestDb, over: { name?: string; tier?: Tier; balance?: bigint } = {}) {
  return workspaceRepository.create(db, {
    name: over.name ?? 'Test workspace',
    tier: over.tier ?? 'payg',
    balance: over.balance ?? 10_000_000n,
  });
}

export interface KeyOptions {
  scopes?: string[];
  spendCap?: bigint | null;
  spent?: bigint;
  expiresAt?: Date | null;
  revoked?: boolean;
  name?: string;
  /** The models the key may use (empty: all). */
  allowedModels?: string[];
  /** The key's own paid calls per minute. */
  rpm?: number | null;
}

/** A key and its secret (the secret exists only here, as for a real caller). */
export async function makeKey(db: TestDb, workspaceId: string, options: KeyOptions = {}) {
  const k = newApiKey();
  let key = await apiKeyRepository.create(db, {
    workspaceId,
    name: options.name ?? 'test key',
    prefix: k.prefix,
    hash: k.hash,
    scopes: options.scopes ?? [...SCOPES],
    spendCap: options.spendCap ?? null,
    expiresAt: options.expiresAt ?? null,
    createdVia: 'cli',
    allowedModels: options.allowedModels ?? [],
    rpm: options.rpm ?? null,
  });
  if (options.spent !== undefined || options.revoked) {
    key = await db.apiKey.update({
      where: { id: key.id },
      data: { spent: options.spent ?? 0n, revokedAt: options.revoked ? new Date() : null },
    });
  }
  return { key, secret: k.secret };
}

/** A workspace with a balance and a key on it: the caller of most API tests. */
export async function makeCustomer(db: TestDb, opts: { balance?: bigint } & KeyOptions = {}) {
  const { balance, ...keyOptions } = opts;
  const ws = await makeWorkspace(db, { balance: balance ?? 10_000_000n });
  const { key, secret } = await makeKey(db, ws.id, keyOptions);
  return { ws, key, secret };
}

/**
 * Holds the price and writes the queued task, as the edge's creation does (taskRepository.createMany, one item);
 * throws the 402 when the hold cannot be made.
 */
export async function createQueuedTask(db: TestDb, input: CreateTaskInput, now = new Date()): Promise<TaskRow> {
  const [created] = await taskRepository.createMany(db, [input], now);
  if (created instanceof Error) throw created;
  return created!;
}

/**
 * A queued generation task with its hold, made as the edge makes one (createQueuedTask); a workspace with a
 * balance and a key are made for it unless given.
 */
export async function makeTask(db: TestDb, over: Partial<CreateTaskInput> = {}) {
  let { workspaceId, apiKeyId } = over;
  if (!workspaceId) workspaceId = (await makeWorkspace(db, { balance: 10_000_000n })).id;
  if (!apiKeyId) apiKeyId = (await makeKey(db, workspaceId)).key.id;
  return createQueuedTask(db, {
    id: newId('tsk'),
    requestId: 'req_test',
    model: 'sim/image-1',
    operation: 'text-to-image',
    input: { prompt: 'a lighthouse', width: 64, height: 64 },
    callbackUrl: null,
    amount: 40_000n,
    deadlineAt: new Date(Date.now() + 10 * 60_000),
    ...over,
    workspaceId,
    apiKeyId,
  });
}

/** A user with a password, a member of the workspace with `role` (the password is known to the test). */
/**
 * Puts tasks past a reconciler's stale threshold by moving their updatedAt back `agoMs` (the only column a reconciler
 * judges staleness by): by default ten minutes, past any threshold a test sets, so a test can keep its threshold far
 * above how long a loaded machine takes between two of its steps (its other tasks never go stale by slowness).
 */
export async function letTasksGoStale(db: TestDb, ids: string[], agoMs = 10 * 60_000) {
  await db.task.updateMany({ where: { id: { in: ids } }, data: { updatedAt: new Date(Date.now() - agoMs) } });
}

export async function makeMember(
  db: TestDb,
  workspaceId: string,
  role: Role,
  over: { email?: string; password?: string; name?: string } = {},
) {
  const email = over.email ?? `${role}-${newId('usr').slice(4, 14).toLowerCase()}@example.com`;
  const password = over.password ?? 'correct horse battery staple';
  const user = await userRepository.create(db, {
    email,
    passwordHash: await hashPassword(password),
    name: over.name ?? null,
  });
  await userRepository.addMember(db, workspaceId, user.id, role);
  return { user, email: user.email, password };
}
