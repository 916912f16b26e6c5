import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';

export type S3Settings = Config['s3'];

/**
 * The S3 client every service uses. Checksums only WHEN_REQUIRED: with the SDK's default a streamed PutObject is
 * sent aws-chunked, which some S3-compatible servers (s3rver) store with the chunk framing, silently corrupt.
 */
export function createS3(s: S3Settings): S3Client {
  return new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: s.forcePathStyle,
    credentials: s.accessKeyId ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey ?? '' } : undefined,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/**
 * Resolves when the bucket is reachable; the error says which bucket and why otherwise. Used at start and by /readyz.
 */
export async function checkBucket(s3: S3Client, bucket: string, abortSignal?: AbortSignal): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal });
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const why =
      status === 404
        ? 'does not exist'
        : status === 403
          ? 'is not accessible with these credentials'
          : `is unreachable (${(e as Error).name}: ${(e as Error).message})`;
    throw new Error(`S3 bucket "${bucket}" ${why}`, { cause: e });
  }
}
