// The retention sweep and saved projects against real Postgres and S3: a file attached to a project is never swept,
// including one attached after the sweep read it as expired, and no attach can leave a kept row without its bytes.
// Attaches here judge visibility a little in the past (an edge whose clock trails the archiver's), which is what lets
// an attach reach a file the sweep has already read as expired.
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { fileRepository, newId, projectRepository } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { fileObjectKey, outputObjectKey } from '@gensvc/storage';
import { makeWorkspace, objectKeys, useTestContext } from '@gensvc/testing';
import { filesRetentionSweep } from './files-retention-sweep';

const ctx = useTestContext();
const logger = createLogger({ service: 'sweep-projects-test', level: 'silent' });
const DAY = 86_400_000;

async function expiredUpload(workspaceId: string) {
  const id = newId('file');
  const storageKey = fileObjectKey(workspaceId, id);
  await ctx.s3.send(
    new PutObjectCommand({
      Bucket: ctx.config.s3.bucket,
      Key: storageKey,
      Body: Buffer.from(id),
      ContentType: 'image/png',
    }),
  );
  await fileRepository.create(ctx.db, {
    id,
    workspaceId,
    source: 'upload',
    purpose: 'vision',
    filename: 'f.png',
    contentType: 'image/png',
    bytes: BigInt(id.length),
    storageKey,
    createdAt: new Date(Date.now() - 30 * DAY - 60_000),
    expiresAt: new Date(Date.now() - 60_000),
  });
  return { id, storageKey };
}

async function project(workspaceId: string) {
  const made = await projectRepository.create(ctx.db, {
    id: newId('proj'),
    workspaceId,
    name: 'Keep',
    description: '',
    createdById: null,
  });
  if (!made.ok) throw new Error('no project');
  return made.project;
}

/** An S3 client whose deletions each take `ms` and first call `onDelete`, so attaches land while a batch is held. */
function slowDeletes(s3: S3Client, ms: number, onDelete: () => void) {
  return new Proxy(s3, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: unknown, ...rest: unknown[]) => {
        if (command instanceof DeleteObjectCommand) {
          onDelete();
          await new Promise((r) => setTimeout(r, ms));
        }
        return (target.send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
      };
    },
  });
}

beforeEach(async () => {
  await ctx.db.file.deleteMany({});
  for (const key of await objectKeys(ctx.s3, ctx.config.s3.bucket))
    await ctx.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
});

it('a file attached after the sweep read it is kept, row and bytes', async () => {
  const ws = await makeWorkspace(ctx.db);
  const p = await project(ws.id);
  const files = [await expiredUpload(ws.id), await expiredUpload(ws.id), await expiredUpload(ws.id)];
  const now = new Date();

  // The sweep's read, then an attach, then its removal of what it read.
  const read = await fileRepository.purgeable(ctx.db, now, 100);
  expect(read.map((f) => f.id).sort()).toEqual(files.map((f) => f.id).sort());
  const kept = files[1]!;
  expect(await projectRepository.attach(ctx.db, ws.id, p.id, kept.id, new Date(now.getTime() - 120_000))).toBe(
    'attached',
  );
  const deleted: string[] = [];
  const round = await fileRepository.purge(
    ctx.db,
    read.map((f) => f.id),
    now,
    async (batch) => {
      for (const f of batch) {
        await ctx.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.s3.bucket, Key: f.storageKey }));
        deleted.push(f.id);
      }
      return batch.map((f) => f.id);
    },
  );
  expect(round).toEqual({ taken: 2, removed: 2 });
  expect(deleted).not.toContain(kept.id);
  expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toEqual([kept.storageKey]);
  expect((await fileRepository.get(ctx.db, ws.id, kept.id))?.expiresAt).toBeNull();
  // The next hourly run leaves it too.
  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger })).toEqual({ removed: 0 });
  expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toEqual([kept.storageKey]);
});

it('attaches racing a sweep: every file ends attached with its bytes, or gone whole', async () => {
  const ws = await makeWorkspace(ctx.db);
  const p = await project(ws.id);
  const files: { id: string; storageKey: string }[] = [];
  for (let i = 0; i < 24; i++) files.push(await expiredUpload(ws.id));
  const edgeNow = () => new Date(Date.now() - 120_000);
  const attach = (i: number) => projectRepository.attach(ctx.db, ws.id, p.id, files[i]!.id, edgeNow());

  // The sweep takes the files from the first; each of its deletions sets off an attach of one from the last, so the
  // two meet in the middle, attaches landing on rows read, locked, or not yet reached.
  const results: Promise<string>[] = [];
  let fromEnd = files.length - 1;
  await filesRetentionSweep(
    {
      db: ctx.db,
      s3: slowDeletes(ctx.s3, 15, () => {
        if (fromEnd >= 0) results[fromEnd] = attach(fromEnd--);
      }),
      config: ctx.config,
      logger,
    },
    { batchSize: 5, concurrency: 2 },
  );
  for (let i = 0; i <= fromEnd; i++) results[i] = attach(i);
  const settled = await Promise.all(results);
  const objects = new Set(await objectKeys(ctx.s3, ctx.config.s3.bucket));
  const rows = new Map((await ctx.db.file.findMany()).map((r) => [r.id, r]));
  const attached = new Set((await ctx.db.projectFile.findMany()).map((a) => a.fileId));
  const outcome = files.map((f, i) => {
    const row = rows.get(f.id);
    if (settled[i] === 'attached') {
      expect({ row: row?.expiresAt, attached: attached.has(f.id), bytes: objects.has(f.storageKey) }).toEqual({
        row: null,
        attached: true,
        bytes: true,
      });
      return 'kept';
    }
    expect(settled[i]).toBe('no_file');
    // Not attached: swept by this run, or (locked by an attach when read) left hidden for the next one.
    expect(row === undefined ? !objects.has(f.storageKey) : row.expiresAt !== null).toBe(true);
    return row ? 'left' : 'swept';
  });
  // Both sides won some: the race was run, not sidestepped.
  expect(outcome).toContain('kept');
  expect(outcome).toContain('swept');
  await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger });
  expect((await ctx.db.file.findMany()).every((r) => r.expiresAt === null)).toBe(true);
  expect(objects.size).toBeGreaterThanOrEqual(outcome.filter((o) => o === 'kept').length);
});

it("a kept output's public copy ends with its tier; the library entry and bytes stay", async () => {
  const ws = await makeWorkspace(ctx.db, { tier: 'free' });
  const p = await project(ws.id);
  const output = async (publicInMs: number) => {
    const id = newId('file');
    const storageKey = outputObjectKey(ws.id, id);
    await ctx.s3.send(new PutObjectCommand({ Bucket: ctx.config.s3.bucket, Key: storageKey, Body: Buffer.from(id) }));
    await fileRepository.create(ctx.db, {
      id,
      workspaceId: ws.id,
      source: 'generated',
      purpose: 'output',
      filename: 'o.png',
      contentType: 'image/png',
      bytes: BigInt(id.length),
      storageKey,
      createdAt: new Date(Date.now() - 6 * DAY),
      expiresAt: new Date(Date.now() + 1_000),
      publicExpiresAt: new Date(Date.now() + publicInMs),
    });
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, id)).toBe('attached');
    return { id, storageKey };
  };
  const over = await output(1_000);
  const live = await output(DAY);
  const later = new Date(Date.now() + 2_000);

  expect(await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger }, { now: later })).toEqual({
    removed: 0,
  });
  const privateKey = fileObjectKey(ws.id, over.id);
  expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toEqual([live.storageKey, privateKey].sort());
  const row = await fileRepository.get(ctx.db, ws.id, over.id, later);
  expect({ key: row?.storageKey, expiresAt: row?.expiresAt }).toEqual({ key: privateKey, expiresAt: null });
  // Run again: nothing moves twice.
  await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger }, { now: later });
  expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toEqual([live.storageKey, privateKey].sort());

  // A run killed after the copy and the public object's removal, before its row moved: the next one finishes.
  const killed = await output(1_000);
  const killedKey = fileObjectKey(ws.id, killed.id);
  await ctx.s3.send(
    new PutObjectCommand({ Bucket: ctx.config.s3.bucket, Key: killedKey, Body: Buffer.from(killed.id) }),
  );
  await ctx.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.s3.bucket, Key: killed.storageKey }));
  await filesRetentionSweep({ db: ctx.db, s3: ctx.s3, config: ctx.config, logger }, { now: later });
  expect((await fileRepository.get(ctx.db, ws.id, killed.id, later))?.storageKey).toBe(killedKey);
  expect(await objectKeys(ctx.s3, ctx.config.s3.bucket)).toEqual([live.storageKey, privateKey, killedKey].sort());
});
