// Object bytes in S3: keys, streamed puts, ranged gets, deletes and presigned links. Postgres holds what the bytes
// are; S3 holds only the bytes, under keys that name their workspace.
import type { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createS3, type S3Settings } from './s3';

/** Multipart part size and parts in flight: a stream holds at most about (queue size + 1) parts in memory. */
const UPLOAD_PART_SIZE = 5 * 1024 * 1024;
const UPLOAD_QUEUE_SIZE = 2;

/** Where a workspace file's bytes live (uploads: private). The id is unguessable, so the key is too. */
export function fileObjectKey(workspaceId: string, fileId: string): string {
  return `workspaces/${workspaceId}/files/${fileId}`;
}

/**
 * Every generated output's public copy lives under this prefix, and only they do: the deployments' bucket policy
 * (infra/outputs-bucket-policy.json) allows anonymous GET on it alone, so `{file_url}/<bucket>/outputs/...` links
 * work for anyone (spec §2.5: public by default) while uploads stay private.
 */
export const PUBLIC_OUTPUTS_PREFIX = 'outputs/';

/** Where a generated output's bytes live: under the public prefix. The id is an HMAC under the server secret. */
export function outputObjectKey(workspaceId: string, fileId: string): string {
  return `${PUBLIC_OUTPUTS_PREFIX}${workspaceId}/${fileId}`;
}

export interface PutStreamInput {
  bucket: string;
  key: string;
  body: Readable;
  contentType: string;
  contentDisposition?: string;
}

/**
 * Streams `body` into `key` with lib-storage's Upload: one PutObject when the body fits in one part, a multipart
 * upload above. Resolves once the object is complete. To give up, destroy `body` with an error: the promise then
 * rejects once the parts in flight have settled and the multipart upload is aborted, so nothing is left behind.
 */
export async function putObjectStream(s3: S3Client, input: PutStreamInput): Promise<void> {
  const upload = new Upload({
    client: s3,
    params: {
      Bucket: input.bucket,
      Key: input.key,
      Body: input.body,
      ContentType: input.contentType,
      ...(input.contentDisposition ? { ContentDisposition: input.contentDisposition } : {}),
    },
    partSize: UPLOAD_PART_SIZE,
    queueSize: UPLOAD_QUEUE_SIZE,
    leavePartsOnError: false,
  });
  await upload.done();
}

export interface PutBufferInput {
  bucket: string;
  key: string;
  body: Buffer;
  contentType: string;
  contentDisposition?: string;
}

/**
 * Puts bytes the caller already holds whole as one PutObject. A failed put deletes the key: some S3-compatible
 * servers (s3rver) keep the bytes of a request cut off mid-way. Callers put to keys no row points to yet.
 */
export async function putObjectBuffer(s3: S3Client, input: PutBufferInput): Promise<void> {
  const command = new PutObjectCommand({
    Bucket: input.bucket,
    Key: input.key,
    Body: input.body,
    ContentLength: input.body.length,
    ContentType: input.contentType,
    ...(input.contentDisposition ? { ContentDisposition: input.contentDisposition } : {}),
  });
  try {
    await s3.send(command);
  } catch (e) {
    await deleteObject(s3, input.bucket, input.key).catch(() => undefined);
    throw e;
  }
}

export interface ObjectRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface ObjectStream {
  body: Readable;
  contentLength: number;
  contentType: string | undefined;
}

/** The object's bytes (or one range of them) as a stream; null when there is no such object. */
export async function getObjectStream(
  s3: S3Client,
  bucket: string,
  key: string,
  range?: ObjectRange,
  abortSignal?: AbortSignal,
): Promise<ObjectStream | null> {
  try {
    const out = await s3.send(
      new GetObjectCommand({
        Bucket: bucket,
        Key: key,
        ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
      }),
      { abortSignal },
    );
    return { body: out.Body as Readable, contentLength: out.ContentLength ?? 0, contentType: out.ContentType };
  } catch (e) {
    if (isMissing(e)) return null;
    throw e;
  }
}

/** Deletes the object; deleting a missing object succeeds (S3 semantics), so a retried delete is harmless. */
export async function deleteObject(s3: S3Client, bucket: string, key: string): Promise<void> {
  try {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  } catch (e) {
    if (!isMissing(e)) throw e;
  }
}

/**
 * Moves an object within the bucket: copy, then delete the source. Safe to repeat after a crash at any point: when
 * the source is already gone and the target exists, the move is done.
 */
export async function moveObject(s3: S3Client, bucket: string, from: string, to: string): Promise<void> {
  try {
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: `${bucket}/${encodeURI(from)}` }));
  } catch (e) {
    if (!isMissing(e)) throw e;
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: to }));
  }
  await deleteObject(s3, bucket, from);
}

export interface PresignOptions {
  expiresInSeconds: number;
  /** Overrides the stored headers on the answer (response-content-disposition / -type). */
  contentDisposition?: string;
  contentType?: string;
}

/** A GetObject URL that needs no credentials until it expires; computed locally, no request is made. */
export function presignGetObject(s3: S3Client, bucket: string, key: string, options: PresignOptions): Promise<string> {
  return getSignedUrl(
    s3,
    new GetObjectCommand({
      Bucket: bucket,
      Key: key,
      ...(options.contentDisposition ? { ResponseContentDisposition: options.contentDisposition } : {}),
      ...(options.contentType ? { ResponseContentType: options.contentType } : {}),
    }),
    { expiresIn: options.expiresInSeconds },
  );
}

/**
 * The client presigned delivery links are made with: its endpoint is the public file host (FILE_BASE_URL, which
 * defaults to the S3 endpoint), so links point there; the signature covers the host.
 */
export function createPresignS3(s: S3Settings, fileHost: string): S3Client {
  return createS3({ ...s, endpoint: fileHost, forcePathStyle: true });
}

function isMissing(e: unknown): boolean {
  // Not any 404: a missing bucket (NoSuchBucket) is a configuration fault and must surface.
  return (e as { name?: string })?.name === 'NoSuchKey';
}
