// The data the browser tests look at: people, outputs with real image bytes in S3, tasks with callback attempts,
// and ledger charges over the last 30 days.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { hashPassword } from '@gensvc/auth';
import { fileRepository, membershipRepository, newId, userRepository } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { fileObjectKey } from '@gensvc/storage';
import { makeKey, makeOutput as makeGeneratedOutput, makeTask, makeWorkspace, type TestContext } from '@gensvc/testing';
import { gradientPng } from './png';

export async function makeUser(db: TestDb, email: string, password: string, name: string | null = null) {
  return userRepository.create(db, { email, passwordHash: await hashPassword(password), name });
}

export async function addMember(db: TestDb, workspaceId: string, userId: string, role: 'owner' | 'admin' | 'member') {
  const r = await membershipRepository.add(db, workspaceId, userId, role);
  if (!r.ok) throw new Error(`membership not added: ${r.reason}`);
}

export interface SeededOutput {
  fileId: string;
  taskId: string;
  storageKey: string;
  prompt: string;
  model: string;
  kind: 'image' | 'video';
}

const PALETTES: [number, number, number][][] = [
  [
    [16, 163, 127],
    [13, 13, 60],
  ],
  [
    [250, 180, 80],
    [200, 40, 90],
  ],
  [
    [90, 120, 250],
    [20, 200, 220],
  ],
  [
    [240, 240, 200],
    [60, 140, 60],
  ],
  [
    [170, 80, 240],
    [250, 120, 160],
  ],
];

/** A generated output, made by the shared factory (libs/testing makeOutput) with a picture worth looking at. */
export async function makeOutput(
  ctx: TestContext,
  workspaceId: string,
  apiKeyId: string,
  o: { prompt: string; model: string; kind: 'image' | 'video'; index: number; ageMinutes: number },
): Promise<SeededOutput> {
  const [from, to] = PALETTES[o.index % PALETTES.length]!;
  const made = await makeGeneratedOutput(ctx, workspaceId, {
    kind: o.kind,
    model: o.model,
    prompt: o.prompt,
    apiKeyId,
    cost: o.kind === 'image' ? 40_000n : 250_000n,
    createdAt: new Date(Date.now() - o.ageMinutes * 60_000),
    width: 512,
    height: 512,
    durationSeconds: 4,
    ...(o.kind === 'image' ? { bytes: gradientPng(256, from!, to!) } : {}),
  });
  return {
    fileId: made.file.id,
    taskId: made.task.id,
    storageKey: made.key,
    prompt: o.prompt,
    model: o.model,
    kind: o.kind,
  };
}

/** An upload (the Uploads tab). */
export async function makeUpload(ctx: TestContext, workspaceId: string, filename: string) {
  const fileId = newId('file');
  const storageKey = fileObjectKey(workspaceId, fileId);
  const bytes = gradientPng(128, [230, 230, 230], [120, 120, 140]);
  await ctx.s3.send(
    new PutObjectCommand({ Bucket: ctx.config.s3.bucket, Key: storageKey, Body: bytes, ContentType: 'image/png' }),
  );
  await fileRepository.create(ctx.db, {
    id: fileId,
    workspaceId,
    source: 'upload',
    purpose: 'vision',
    filename,
    contentType: 'image/png',
    bytes: BigInt(bytes.length),
    storageKey,
    expiresAt: new Date(Date.now() + 30 * 86_400_000),
  });
  return fileId;
}

/** A task whose callback failed twice, then was delivered: the task page's attempt log. */
export async function makeDeliveredTask(ctx: TestContext, workspaceId: string, apiKeyId: string) {
  const task = await makeTask(ctx.db, {
    workspaceId,
    apiKeyId,
    callbackUrl: 'https://hooks.example.com/gensvc',
    input: { prompt: 'a red fox in the snow', size: '512x512' },
  });
  await ctx.db.task.update({
    where: { id: task.id },
    data: { status: 'completed', completedAt: new Date(), cost: 40_000n, callbackState: 'delivered' },
  });
  const attempts = [
    { statusCode: 503, durationMs: 812, error: 'receiver answered 503' },
    { statusCode: null, durationMs: 10_000, error: 'timed out after 10000 ms' },
    { statusCode: 200, durationMs: 143, error: null },
  ];
  for (const [i, a] of attempts.entries()) {
    await ctx.db.callbackAttempt.create({
      data: {
        id: newId('cba'),
        workspaceId,
        taskId: task.id,
        attempt: i + 1,
        deliveryId: `dlv_${task.id.slice(4)}_${i + 1}`,
        url: 'https://hooks.example.com/gensvc',
        createdAt: new Date(Date.now() - (3 - i) * 60_000),
        ...a,
      },
    });
  }
  return task.id;
}

/**
 * Charges over the last 29 days on three models and two keys (the usage chart's data): one per (day, model) but
 * some skipped. Returns their sum in micro-units and how many there are. 29, not 30: a run that seeds before midnight
 * UTC and opens the page after it sees a 30-day window one day later, which still holds every charge.
 */
export async function seedCharges(
  db: TestDb,
  workspaceId: string,
  keyIds: string[],
): Promise<{ total: bigint; entries: number }> {
  const models = ['sim/image-1', 'sim/video-1', 'sim/chat-1'];
  let balance = 50_000_000n;
  let total = 0n;
  let entries = 0;
  for (let day = 28; day >= 0; day--) {
    for (const [m, model] of models.entries()) {
      if ((day + m) % 4 === 3) continue; // some days without a given model
      const amount = BigInt(20_000 + ((day * 7919 + m * 104_729) % 90) * 3_000);
      balance -= amount;
      total += amount;
      entries++;
      await db.ledgerEntry.create({
        data: {
          id: newId('led'),
          workspaceId,
          apiKeyId: keyIds[(day + m) % keyIds.length] ?? null,
          kind: 'charge',
          amount: -amount,
          balanceAfter: balance,
          model,
          createdAt: new Date(Date.now() - day * 86_400_000),
        },
      });
    }
  }
  return { total, entries };
}

export { makeKey, makeWorkspace };

/** A finished task whose callback was parked `agoMs` ago after five failed attempts: what a recovery restarts. */
export async function makeParkedTask(ctx: TestContext, workspaceId: string, apiKeyId: string, agoMs: number) {
  const url = 'https://hooks.example.com/down';
  const task = await makeTask(ctx.db, { workspaceId, apiKeyId, callbackUrl: url });
  const at = new Date(Date.now() - agoMs);
  await ctx.db.callbackAttempt.createMany({
    data: [1, 2, 3, 4, 5].map((attempt) => ({
      id: newId('cba'),
      workspaceId,
      taskId: task.id,
      attempt,
      deliveryId: `dlv_${task.id.slice(4)}_${attempt}`,
      url,
      statusCode: 503,
      durationMs: 20,
      error: 'receiver answered 503',
      createdAt: at,
    })),
  });
  await ctx.db.task.update({
    where: { id: task.id },
    data: { status: 'completed', completedAt: at, cost: 40_000n, callbackState: 'parked', updatedAt: at },
  });
  return task.id;
}
