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
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { putObjectDirect, type DirectPutInput } from './direct-put';
import { createS3, type S3Settings } from './s3';

/** Multipart part size and parts in flight: at most (queueSize + 1) × partSize of a stream is held in memory. */
export const UPLOAD_PART_SIZE = 5 * 1024 * 1024;
export const UPLOAD_QUEUE_SIZE = 2;

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
}

/**
 * Streams `body` into `key`: one streamed PutObject when its length is known and at most a part size (nothing
 * buffered), otherwise one PutObject under a part size or a multipart upload above. Resolves once the object is
 * complete. To give up, destroy `body` with an error: the promise then rejects only once nothing can be left behind
 * (the single PutObject's request cut off and its key deleted, or the parts in flight settled and the multipart
 * upload aborted).
 *
 * The stream is copied once into part-sized buffers, reused as their parts are sent: at most UPLOAD_QUEUE_SIZE parts
 * in flight and one filling, and nothing else (issue 11: lib-storage's Upload concatenated each part out of the
 * stream's chunks and kept the part's tail as a view of that copy, so every upload held about twice its parts and
 * left the rest to the garbage collector; 10 concurrent 25 MiB uploads raised the edge's RSS by 165–213 MiB).
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
  const spare: Buffer[] = [];
  let part: Buffer = Buffer.allocUnsafe(UPLOAD_PART_SIZE);
  let filled = 0;
  let sentParts = 0;
  let uploadId: string | undefined;
  const done: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let failed: { error: unknown } | undefined;

  const send = (buffer: Buffer, length: number) => {
    const PartNumber = ++sentParts;
    const sent: Promise<void> = s3
      .send(new UploadPartCommand({ Bucket: input.bucket, Key: input.key, UploadId: uploadId, PartNumber, Body: buffer.subarray(0, length), ContentLength: length }))
      .then(({ ETag }) => {
        done.push({ ETag, PartNumber });
        spare.push(buffer);
      })
      .catch((error: unknown) => {
        failed ??= { error };
      })
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };
  const check = () => {
    if (failed) throw failed.error;
  };

  try {
    for await (const chunk of input.body as AsyncIterable<Buffer>) {
      check();
      for (let offset = 0; offset < chunk.length; ) {
        const n = Math.min(chunk.length - offset, UPLOAD_PART_SIZE - filled);
        chunk.copy(part, filled, offset, offset + n);
        filled += n;
        offset += n;
        if (filled < UPLOAD_PART_SIZE) continue;
        uploadId ??= (await s3.send(new CreateMultipartUploadCommand(object))).UploadId;
        while (inFlight.size >= UPLOAD_QUEUE_SIZE) await Promise.race(inFlight);
        check();
        send(part, filled);
        part = spare.pop() ?? Buffer.allocUnsafe(UPLOAD_PART_SIZE);
        filled = 0;
      }
    }
    if (uploadId === undefined) {
      await s3.send(new PutObjectCommand({ ...object, Body: part.subarray(0, filled), ContentLength: filled }));
      return;
    }
    if (filled > 0) send(part, filled);
    await Promise.all(inFlight);
    check();
    done.sort((a, b) => a.PartNumber! - b.PartNumber!);
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: input.bucket, Key: input.key, UploadId: uploadId, MultipartUpload: { Parts: done } }));
  } catch (e) {
    await Promise.all(inFlight);
    if (uploadId !== undefined) {
      await s3.send(new AbortMultipartUploadCommand({ Bucket: input.bucket, Key: input.key, UploadId: uploadId })).catch(() => undefined);
    }
    throw e;
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
