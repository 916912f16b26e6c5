// The retention sweep against real Postgres and S3 (s3rver): it removes exactly the files whose retention is over,
// row and bytes, and a run killed half-way leaves a state that is consistent and that the next run completes.
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { fileRepository, newId } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { fileObjectKey } from '@gensvc/storage';
import { eventually, makeWorkspace, objectKeys, useTestContext } from '@gensvc/testing';
import { filesRetentionSweep } from './files-retention-sweep';

const ctx = useTestContext();
const logger = createLogger({ service: 'sweep-test', level: 'silent' });
const DAY = 86_400_000;

const objectsInBucket = () => objectKeys(ctx.s3, ctx.config.s3.bucket);

interface Made {
  id: string;
  storageKey: string;
}

async function makeFile(
  workspaceId: string,
  o: { expiresInMs: number; publicExpiresInMs?: number; withObject?: boolean },
): Promise<Made> {
  const id = newId('file');
  const storageKey = fileObjectKey(workspaceId, id);
  if (o.withObject !== false) {
    await ctx.s3.send(
      new PutObjectCommand({
        Bucket: ctx.config.s3.bucket,
        Key: storageKey,
        Body: Buffer.from(`bytes of ${id}`),
        ContentType: 'image/png',
      }),
    );
  }
  const now = Date.now();
  await fileRepository.create(ctx.db, {
    id,
    workspaceId,
    source: o.publicExpiresInMs === undefined ? 'upload' : 'generated',
    purpose: o.publicExpiresInMs === undefined ? 'vision' : 'output',
    filename: `${id}.png`,
    contentType: 'image/png',
    bytes: 20n,
    storageKey,
    createdAt: new Date(now - 40 * DAY),
    expiresAt: new Date(now + o.expiresInMs),
    publicExpiresAt: o.publicExpiresInMs === undefined ? null : new Date(now + o.publicExpiresInMs),
  });
  return { id, storageKey };
}

/**
 * Consistency that must hold at every instant, killed or not: no object without a row, no visible row without its
 * object.
 */
async function checkConsistent() {
  const rows = await ctx.db.file.findMany({ select: { storageKey: true, expiresAt: true } });
  const objects = new Set(await objectsInBucket());
  const keys = new Set(rows.map((r) => r.storageKey));
  expect([...objects].filter((k) => !keys.has(k))).toEqual([]);
  const now = new Date();
  expect(rows.filter((r) => (r.expiresAt === null || r.expiresAt > now) && !objects.has(r.storageKey))).toEqual([]);
  return { rows: rows.length, objects: objects.size };
}

/** An S3 client that stops answering after `k` object deletions, as a process killed at that instant would. */
function freezingAfter(s3: S3Client, k: number) {
  let started = 0;
  let deleted = 0;
  const frozen = new Proxy(s3, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: unknown, ...rest: unknown[]) => {
        if (command instanceof DeleteObjectCommand) {
          if (started >= k) return new Promise(() => {});
          started++;
          return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest).then((out) => {
            deleted++;
            return out;
          });
        }
        return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
      };
    },
  });
  return { s3: frozen, deleted: () => deleted };
}

beforeEach(async () => {
  await ctx.db.file.deleteMany({});
  for (const key of await objectsInBucket())
    await ctx.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
});

it('removes exactly the files whose retention is over, and survives a kill half-way', async () => {
  const a = await makeWorkspace(ctx.db, { tier: 'payg' });
  const b = await makeWorkspace(ctx.db, { tier: 'free' });
  const expired: Made[] = [];
  for (let i = 0; i < 12; i++) expired.push(await makeFile(i % 2 ? a.id : b.id, { expiresInMs: -DAY - i * 1000 }));
  // Generated outputs whose library entry and public copy are both over.
  for (let i = 0; i < 3; i++) expired.push(await makeFile(a.id, { expiresInMs: -2 * DAY, publicExpiresInMs: -DAY }));
  // A user delete that died after removing the bytes: a hidden row without its object.
  expired.push(await makeFile(a.id, { expiresInMs: -1000, withObject: false }));
  const kept: Made[] = [];
  for (let i = 0; i < 3; i++) kept.push(await makeFile(i % 2 ? a.id : b.id, { expiresInMs: DAY }));
  // Out of the library, but the public copy on {file_url} is kept longer by tier: row and bytes stay.
  for (let i = 0; i < 2; i++) kept.push(await makeFile(a.id, { expiresInMs: -DAY, publicExpiresInMs: 60 * DAY }));
  expect(await checkConsistent()).toEqual({ rows: 21, objects: 20 });

  // Killed after 7 object deletions with batches of 5: one batch completed (5 rows gone), 2 more objects gone.
  // A kill closes the run's connection, which rolls its open batch back: here the batch's time limit does.
  const killed = freezingAfter(ctx.s3, 7);
  void filesRetentionSweep(
    { db: ctx.db, s3: killed.s3, config: ctx.config, logger },
    { batchSize: 5, batchTimeoutMs: 500 },
  ).catch(() => {});
  await eventually(() => killed.deleted() >= 7, 'the killed run to delete 7 objects', 2_000);
  await new Promise((r) => setTimeout(r, 700));
  expect(killed.deleted()).toBe(7);
  expect(await checkConsistent()).toEqual({ rows: 21 - 5, objects: 20 - 7 });
  // What the API shows is unchanged by the kill: the rows left behind are expired, so hidden.
  const listed = await fileRepository.list(ctx.db, a.id, { limit: 100, order: 'asc' });
  expect(listed!.data.map((f) => f.id).sort()).toEqual(
    kept
      .filter((_, i) => i === 1)
      .map((f) => f.id)
      .sort(),
  );

  // Run again: it completes the work, and a third run has nothing left to do.
  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger }, { batchSize: 5 })).toEqual({
    removed: 16 - 5,
  });
  expect(await checkConsistent()).toEqual({ rows: 5, objects: 5 });
  expect(await ctx.db.file.count({ where: { id: { in: expired.map((f) => f.id) } } })).toBe(0);
  expect(await objectsInBucket()).toEqual(kept.map((f) => f.storageKey).sort());
  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger })).toEqual({ removed: 0 });
});

it('an object that cannot be deleted keeps its row; the run fails and the next one finishes', async () => {
  const ws = await makeWorkspace(ctx.db);
  const files: Made[] = [];
  for (let i = 0; i < 6; i++) files.push(await makeFile(ws.id, { expiresInMs: -DAY }));
  const stuck = files[2]!.storageKey;
  const failing = new Proxy(ctx.s3, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: unknown, ...rest: unknown[]) => {
        if (command instanceof DeleteObjectCommand && command.input.Key === stuck)
          return Promise.reject(Object.assign(new Error('S3 is down'), { name: 'InternalError' }));
        return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
      };
    },
  });
  await expect(filesRetentionSweep({ db: ctx.db, s3: failing, config: ctx.config, logger })).rejects.toThrow(
    /1 object\(s\) could not be deleted \(5 file\(s\) removed\)/,
  );
  expect(await checkConsistent()).toEqual({ rows: 1, objects: 1 });
  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger })).toEqual({ removed: 1 });
  expect(await checkConsistent()).toEqual({ rows: 0, objects: 0 });
});

it('works through more than one batch', async () => {
  const ws = await makeWorkspace(ctx.db);
  for (let i = 0; i < 230; i++) await makeFile(ws.id, { expiresInMs: -DAY, withObject: i % 10 === 0 });
  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger })).toEqual({ removed: 230 });
  expect(await checkConsistent()).toEqual({ rows: 0, objects: 0 });
});
