// A generated output as the archiver leaves one: a completed task whose first output is archived, its file row
// (source generated) and its bytes in the test bucket, under the generated-outputs prefix the archiver writes to.
import { Readable } from 'node:stream';
import { fileRepository, newId } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { outputObjectKey, putObjectStream } from '@gensvc/storage';
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
  /** The output's size as the task asked for it and the provider reported it (default 64x48). */
  width?: number;
  height?: number;
  /** Seconds, for a video (default 2). */
  durationSeconds?: number;
  /** The bytes stored (default: a PNG of the size, or an MP4 of the duration). */
  bytes?: Buffer;
}

export async function makeOutput(
  ctx: { db: TestDb; s3: S3Client; config: { s3: { bucket: string } } },
  workspaceId: string,
  o: OutputOptions = {},
) {
  const kind = o.kind ?? 'image';
  const width = o.width ?? 64;
  const height = o.height ?? 48;
  const duration = o.durationSeconds ?? 2;
  const size = `${width}x${height}`;
  const task = await makeTask(ctx.db, {
    workspaceId,
    model: o.model ?? (kind === 'image' ? 'sim/image-1' : 'sim/video-1'),
    operation: kind === 'image' ? 'text-to-image' : 'text-to-video',
    input:
      kind === 'image'
        ? { prompt: o.prompt ?? 'a lighthouse at dawn', size }
        : { prompt: o.prompt ?? 'waves', size, duration_seconds: duration },
    ...(o.apiKeyId ? { apiKeyId: o.apiKeyId } : {}),
  });
  const bytes =
    o.bytes ?? (kind === 'image' ? png(width, height) : mp4({ durationSeconds: duration, mdatBytes: 1024 }));
  const contentType = kind === 'image' ? 'image/png' : 'video/mp4';
  const fileId = newId('file');
  const key = outputObjectKey(workspaceId, fileId);
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
    archiveStatus: 'archived',
    createdAt,
    expiresAt: new Date(createdAt.getTime() + 30 * 24 * 3600_000),
    publicExpiresAt: new Date(createdAt.getTime() + 90 * 24 * 3600_000),
  });
  const entry = {
    kind,
    url: `https://provider.example/${task.id}`,
    content_type: contentType,
    archive_status: 'archived',
    svc_file_id: fileId,
    width,
    height,
    ...(kind === 'video' ? { duration } : {}),
  };
  await ctx.db.task.update({
    where: { id: task.id },
    data: {
      status: 'completed',
      output: { outputs: [entry] },
      cost: o.cost ?? 40_000n,
      completedAt: createdAt,
      createdAt,
    },
  });
  return { task, file, key, bytes };
}
