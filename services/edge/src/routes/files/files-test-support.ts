// Test support for the Files API: real multipart uploads over a socket, and an independent check of presigned links.
import { createHash, createHmac } from 'node:crypto';

export interface UploadOptions {
  filename?: string;
  purpose?: string | null;
  /** Send purpose after the file part. */
  purposeLast?: boolean;
  /** What the client claims; never believed. */
  contentType?: string;
  field?: string;
}

export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** POSTs a multipart form (fields in the order asked) with fetch's own FormData encoder. */
export function upload(baseUrl: string, secret: string, bytes: Buffer, o: UploadOptions = {}, path = '/v1/files') {
  const form = new FormData();
  const purpose = o.purpose === undefined ? 'vision' : o.purpose;
  if (purpose !== null && !o.purposeLast) form.append('purpose', purpose);
  form.append(
    o.field ?? 'file',
    new Blob([bytes], { type: o.contentType ?? 'application/octet-stream' }),
    o.filename ?? 'upload.bin',
  );
  if (purpose !== null && o.purposeLast) form.append('purpose', purpose);
  return fetch(`${baseUrl}${path}`, { method: 'POST', headers: bearer(secret), body: form });
}

const rfc3986 = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Whether a presigned GET URL carries a valid AWS Signature V4 for its own host, checked independently of the SDK.
 * s3rver does not verify V4 signatures, so tests check them here: a link signed for one host and served from
 * another would be refused by real S3.
 */
export function validPresignedGet(url: string, secretAccessKey: string): boolean {
  const u = new URL(url);
  const q = [...u.searchParams.entries()].filter(([k]) => k !== 'X-Amz-Signature');
  const canonicalQuery = q
    .map(([k, v]) => [rfc3986(k), rfc3986(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const signedHeaders = u.searchParams.get('X-Amz-SignedHeaders');
  if (signedHeaders !== 'host') return false;
  const canonicalRequest = ['GET', u.pathname, canonicalQuery, `host:${u.host}\n`, 'host', 'UNSIGNED-PAYLOAD'].join(
    '\n',
  );
  const amzDate = u.searchParams.get('X-Amz-Date') ?? '';
  const [, date, region, service] = (u.searchParams.get('X-Amz-Credential') ?? '').split('/');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonicalRequest).digest('hex')].join(
    '\n',
  );
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date!), region!), service!), 'aws4_request');
  return createHmac('sha256', key).update(toSign).digest('hex') === u.searchParams.get('X-Amz-Signature');
}
