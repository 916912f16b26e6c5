// Object bytes in S3: keys, streamed puts, ranged gets, deletes and presigned links. Postgres holds what the bytes
// are; S3 holds only the bytes, under keys that name their workspace.
import { finished, Transform, type Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { putObjectDirect, type DirectPutInput } from './direct-put';
import { processPartBuffers, UPLOAD_PART_SIZE, type PartBufferPool } from './part-buffers';
import { createS3, type S3Settings } from './s3';

/** Parts of one upload in flight at once: with the one filling, a lone upload holds at most three part buffers. */
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
  /**
   * The body's exact length when known beforehand (a response's Content-Length). Up to a part size it goes as one
   * PutObject streaming the body: no part buffered, one request. A body that ends short or errors fails the request
   * before S3 has the whole object, so none is stored.
   */
  contentLength?: number;
  /** Where the part buffers come from: the process's pool unless a test gives its own. */
  partBuffers?: PartBufferPool;
}

/**
 * Streams `body` into `key`: one streamed PutObject when its length is known and at most a part size (nothing
 * buffered), otherwise one PutObject under a part size or a multipart upload above. Resolves once the object is
 * complete. To give up, destroy `body` with an error: the promise then rejects only once nothing can be left behind
 * (the single PutObject's request cut off and its key deleted, or the parts in flight settled and the multipart
 * upload aborted), and every part buffer it held is back in its pool.
 *
 * The stream is copied once into part buffers lent by the process's pool (part-buffers.ts): at most UPLOAD_QUEUE_SIZE
 * parts of one upload in flight and one filling, and all uploads of the process together at most the pool's capacity
 * (issue 11: 10 concurrent 25 MiB uploads, each with its own three buffers, raised the edge's RSS by 153 MiB; before
 * that, lib-storage's Upload concatenated each part out of the stream's chunks and held about twice its parts).
 */
export async function putObjectStream(s3: S3Client, input: PutStreamInput): Promise<void> {
  const object = {
    Bucket: input.bucket,
    Key: input.key,
    ContentType: input.contentType,
    ...(input.contentDisposition ? { ContentDisposition: input.contentDisposition } : {}),
  };
  const length = input.contentLength;
  if (length !== undefined && Number.isSafeInteger(length) && length >= 0 && length <= UPLOAD_PART_SIZE) {
    return putStreamed(s3, { ...object, ContentLength: length }, input.body, length);
  }
  return putParts(s3, object, input.body, input.partBuffers ?? processPartBuffers);
}

export interface PutBufferInput {
  bucket: string;
  key: string;
  body: Buffer;
  contentType: string;
  contentDisposition?: string;
}

/**
 * Puts bytes the caller already holds whole (a download short enough to have come whole, see the archiver) as one
 * PutObject sent in one write, without the stream layers a streamed put needs to count and cut its body. As after a
 * failed streamed put, a failed request deletes the key (a server that writes bytes as they arrive may have kept
 * part of them); callers put to keys no row points to yet.
 */
export async function putObjectBuffer(s3: S3Client, input: PutBufferInput): Promise<void> {
  const params: DirectPutInput = {
    Bucket: input.bucket,
    Key: input.key,
    ContentType: input.contentType,
    ...(input.contentDisposition ? { ContentDisposition: input.contentDisposition } : {}),
    ContentLength: input.body.length,
  };
  try {
    await putObjectDirect(s3, params, input.body);
  } catch (e) {
    await deleteObject(s3, params.Bucket, params.Key).catch(() => undefined);
    throw e;
  }
}

/**
 * The buffered path: one PutObject of the whole body if it ends within the first part, a multipart upload otherwise.
 * A buffer goes back to the pool when its part is sent, or never was; one whose request failed is discarded (the
 * failed request may still be writing it), which frees its slot all the same.
 */
async function putParts(s3: S3Client, object: PutObjectCommandInput & { Bucket: string; Key: string }, body: Readable, pool: PartBufferPool): Promise<void> {
  const { Bucket, Key } = object;
  // The loop stops reading the body while it waits for a buffer; a body that fails meanwhile must end that wait.
  const gone = new AbortController();
  const onClose = () => {
    if (!body.readableEnded) gone.abort(body.errored ?? new Error('the body closed before its end'));
  };
  body.once('close', onClose);
  let part: Buffer | undefined;
  let filled = 0;
  let sentParts = 0;
  let uploadId: string | undefined;
  const done: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let failed: { error: unknown } | undefined;

  const send = (buffer: Buffer, length: number) => {
    const PartNumber = ++sentParts;
    const sent: Promise<void> = s3
      .send(new UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber, Body: buffer.subarray(0, length), ContentLength: length }))
      .then(
        ({ ETag }) => {
          done.push({ ETag, PartNumber });
          pool.release(buffer);
        },
        (error: unknown) => {
          failed ??= { error };
          pool.discard(buffer);
        },
      )
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };
  const check = () => {
    if (failed) throw failed.error;
  };

  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      check();
      for (let offset = 0; offset < chunk.length; ) {
        part ??= await pool.acquire(gone.signal);
        const n = Math.min(chunk.length - offset, part.length - filled);
        chunk.copy(part, filled, offset, offset + n);
        filled += n;
        offset += n;
        if (filled < part.length) continue;
        uploadId ??= (await s3.send(new CreateMultipartUploadCommand(object))).UploadId;
        while (inFlight.size >= UPLOAD_QUEUE_SIZE) await Promise.race(inFlight);
        check();
        send(part, filled);
        part = undefined;
        filled = 0;
      }
    }
    if (uploadId === undefined) {
      const whole = part;
      part = undefined;
      try {
        await s3.send(new PutObjectCommand({ ...object, Body: whole ? whole.subarray(0, filled) : Buffer.alloc(0), ContentLength: filled }));
      } catch (e) {
        if (whole) pool.discard(whole);
        throw e;
      }
      if (whole) pool.release(whole);
      return;
    }
    if (part) {
      send(part, filled);
      part = undefined;
    }
    await Promise.all(inFlight);
    check();
    done.sort((a, b) => a.PartNumber! - b.PartNumber!);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: done } }));
  } catch (e) {
    await Promise.all(inFlight);
    if (uploadId !== undefined) {
      await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => undefined);
    }
    throw e;
  } finally {
    body.off('close', onClose);
    // The part filling when the body failed (or the multipart upload could not start) was never sent.
    if (part) pool.release(part);
  }
}

/**
 * One PutObject of a stream of known length, sent without the SDK's command stack (direct-put.ts). It is not
 * retried, as the SDK does not retry a request whose body is a stream (a transient failure fails the put; the
 * archive job's own retry runs it again). A body that errors, closes early or does not
 * have the declared length aborts the request, so the server sees the connection cut before the declared length
 * arrived, and the call rejects with the body's error. S3 and MinIO store nothing of a cut-off PUT, but some
 * S3-compatible servers (s3rver) write the bytes as they arrive: after a failed put the key is deleted as well.
 * Callers put to keys no row points to yet (a new file id, or an output not yet recorded), so that removes
 * what this put left.
 */
async function putStreamed(s3: S3Client, params: DirectPutInput, body: Readable, length: number): Promise<void> {
  const abort = new AbortController();
  let failed: unknown;
  // The SDK pipes the body into the request, and a pipe passes on neither an error nor a close: the body goes through
  // a counter that fails on an error, a close before the end, or a length other than the declared one, and its
  // failure cuts the request (left alone, the request would wait for the declared length, with no timeout).
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      callback(seen > length ? new Error(`the body is longer than its declared ${length} bytes`) : null, chunk);
    },
    flush(callback) {
      callback(seen < length ? new Error(`the body ended at ${seen} of its declared ${length} bytes`) : null);
    },
  });
  // Not stream.pipeline: it makes an AbortController of its own and aborts it at every end, building a DOMException
  // (its stack captured) each time, ~1 % of the archiver's CPU. The same outcomes, by hand.
  const fail = (e: Error) => {
    if (failed !== undefined) return;
    failed = e;
    abort.abort(e);
    body.destroy();
    counted.destroy();
  };
  finished(body, (e) => e && fail(e));
  counted.on('error', fail);
  body.pipe(counted);
  try {
    await putObjectDirect(s3, params, counted, abort.signal);
  } catch (e) {
    failed ??= e;
  }
  if (failed === undefined) return;
  await deleteObject(s3, params.Bucket, params.Key).catch(() => undefined);
  throw failed;
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
export async function getObjectStream(s3: S3Client, bucket: string, key: string, range?: ObjectRange, abortSignal?: AbortSignal): Promise<ObjectStream | null> {
  try {
    const out = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
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
