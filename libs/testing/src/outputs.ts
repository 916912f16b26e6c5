// A generated output as the archiver leaves one: a completed task whose first output is archived, its file row
// (source generated) and its bytes in the test bucket.
import { Readable } from 'node:stream';
import { fileRepository, newId, type Db } from '@gensvc/db';
import { fileObjectKey, putObjectStream } from '@gensvc/storage';
import type { S3Client } from '@aws-sdk/client-s3';
import { makeTask } from './factories';
import { mp4, png } from './sample-media';

export interface OutputOptions {
  kind?: 'image' | 'video';
  model?: string;
  prompt?: string;
  /** Micro-units charged for the task. */
  cost?: bigint;
  createdAt?: Date;
  apiKeyId?: string;
}

export async function makeOutput(ctx: { db: Db; s3: S3Client; config: { s3: { bucket: string } } }, workspaceId: string, o: OutputOptions = {}) {
  const kind = o.kind ?? 'image';
  const task = await makeTask(ctx.db, {
    workspaceId,
    model: o.model ?? (kind === 'image' ? 'sim/image-1' : 'sim/video-1'),
    operation: kind === 'image' ? 'text-to-image' : 'text-to-video',
    input: kind === 'image' ? { prompt: o.prompt ?? 'a lighthouse at dawn', size: '64x48' } : { prompt: o.prompt ?? 'waves', size: '64x48', duration_seconds: 2 },
    ...(o.apiKeyId ? { apiKeyId: o.apiKeyId } : {}),
  });
  const bytes = kind === 'image' ? png(64, 48) : mp4({ durationSeconds: 2, mdatBytes: 1024 });
  const contentType = kind === 'image' ? 'image/png' : 'video/mp4';
  const fileId = newId('file');
  const key = fileObjectKey(workspaceId, fileId);
  await putObjectStream(ctx.s3, { bucket: ctx.config.s3.bucket, key, body: Readable.from(bytes), contentType });
  const createdAt = o.createdAt ?? new Date();
  const file = await fileRepository.create(ctx.db, {
    id: fileId,
    workspaceId,
    source: 'generated',
    purpose: 'output',
    filename: `${task.id}.${kind === 'image' ? 'png' : 'mp4'}`,
    contentType,
    bytes: BigInt(bytes.length),
    storageKey: key,
    taskId: task.id,
    outputIndex: 0,
    createdAt,
    expiresAt: new Date(createdAt.getTime() + 30 * 24 * 3600_000),
    publicExpiresAt: new Date(createdAt.getTime() + 90 * 24 * 3600_000),
  });
  const output = { outputs: [{ kind, url: `https://provider.example/${task.id}`, archive_status: 'archived', svc_file_id: fileId, width: 64, height: 48, ...(kind === 'video' ? { duration: 2 } : {}) }] };
  await ctx.db.task.update({ where: { id: task.id }, data: { status: 'completed', output, cost: o.cost ?? 40_000n, completedAt: createdAt, createdAt } });
  return { task, file, key, bytes };
}
