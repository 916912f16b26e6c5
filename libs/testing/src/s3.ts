// What a test can see of S3 beyond its objects: the keys under a prefix, and every command a client sent (a
// dangling multipart upload lists no object; only the commands show whether it was completed or aborted).
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

/** Every key in the bucket (under `prefix`, if given), sorted. */
export async function objectKeys(s3: S3Client, bucket: string, prefix?: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

export interface S3Counter {
  /** Bytes S3 has acknowledged: each part once its UploadPart returned, each PutObject once it returned. */
  bytes: number;
  /** The name of every command sent, in order (e.g. 'AbortMultipartUploadCommand'), whether or not it succeeded. */
  commands: string[];
}

/** Counts what `s3` sends from now on; give it a client of the test's own, so nothing else is counted. */
export function countS3Commands(s3: S3Client): S3Counter {
  const counter: S3Counter = { bytes: 0, commands: [] };
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      counter.commands.push(context.commandName ?? '?');
      const out = await next(args);
      if (context.commandName === 'UploadPartCommand' || context.commandName === 'PutObjectCommand') {
        const body = (args.input as { Body?: unknown }).Body;
        if (body instanceof Uint8Array) counter.bytes += body.byteLength;
      }
      return out;
    },
    { step: 'initialize', name: 'countS3Commands' },
  );
  return counter;
}
