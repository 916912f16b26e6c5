// Test support for the Files API: real multipart uploads over a socket, and counts of what S3 and Postgres hold.
import { createHash } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

export const sha256 = (b: Buffer | ArrayBuffer) => createHash('sha256').update(Buffer.from(b as ArrayBuffer)).digest('hex');

export interface UploadOptions {
  filename?: string;
  purpose?: string | null;
  /** Send purpose after the file part. */
  purposeLast?: boolean;
  /** What the client claims; never believed. */
  contentType?: string;
  field?: string;
}

/** POSTs a multipart form (fields in the order asked) with fetch's own FormData encoder. */
export function upload(baseUrl: string, secret: string, bytes: Buffer, o: UploadOptions = {}, path = '/v1/files') {
  const form = new FormData();
  const purpose = o.purpose === undefined ? 'vision' : o.purpose;
  if (purpose !== null && !o.purposeLast) form.append('purpose', purpose);
  form.append(o.field ?? 'file', new Blob([bytes], { type: o.contentType ?? 'application/octet-stream' }), o.filename ?? 'upload.bin');
  if (purpose !== null && o.purposeLast) form.append('purpose', purpose);
  return fetch(`${baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: form });
}

export async function objectKeys(s3: S3Client, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
