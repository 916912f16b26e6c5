// One streamed PutObject sent with the S3 client's own parts, without its per-command middleware stack (issue 12: the
// stack — serializer, user agent, endpoint rules, retry, checksum and deserializer middleware — was 1.2 of the 1.9 ms
// of client CPU a 60 KB streamed put cost, and a fifth of the archiver's CPU per task).
//
// What makes it a real S3 request is the SDK's: the endpoint comes from the client's endpoint rules (the same
// `endpointProvider` a command calls, with the client's region, endpoint, path-style, FIPS, dual-stack and accelerate
// settings), the credentials from the client's credentials provider, the clock from its clock offset, and it is sent
// by the client's request handler (its agent, keep-alive and timeouts). What is left out is what a single put does not
// use: a stream body is never retried by the SDK either, and no checksum is computed when checksums are WHEN_REQUIRED
// (createS3). A bucket whose endpoint rules ask for another signature (S3 Express directory buckets, multi-region
// access points, ARNs) goes through the SDK's command instead.
//
// The SigV4 signature is computed here (sigV4 below: one SHA-256 and one HMAC per put, the signing key kept per
// credentials and day) rather than by the client's signer, which for one unsigned-payload put made five hashes and
// HMACs, one of them an HMAC of the credentials only to look its key cache up: ~10 % of the archiver's fetch-and-put CPU.
import { createHash, createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import { PutObjectCommand, S3ServiceException, type S3Client } from '@aws-sdk/client-s3';

interface DirectTarget {
  url: URL;
  signingRegion: string;
  signingName: string;
}

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

interface HandledResponse {
  statusCode: number;
  headers: Record<string, string | undefined>;
  body: AsyncIterable<Buffer>;
}

/** The parts of the client's resolved config this path reads (the SDK's, typed loosely here). */
interface ClientParts {
  region: () => Promise<string>;
  endpoint?: () => Promise<{ protocol: string; hostname: string; port?: number; path: string }>;
  useFipsEndpoint: () => Promise<boolean>;
  useDualstackEndpoint: () => Promise<boolean>;
  forcePathStyle?: boolean;
  useAccelerateEndpoint?: boolean;
  endpointProvider: (params: Record<string, unknown>, context: object) => { url: URL; properties?: { authSchemes?: Array<{ name: string; signingName?: string; signingRegion?: string }> }; headers?: Record<string, string[]> };
  /** The client's credentials provider (memoised by the SDK: the same object until it refreshes them). */
  credentials: () => Promise<Credentials>;
  requestHandler: { handle(request: unknown, options: { abortSignal?: AbortSignal }): Promise<{ response: HandledResponse }> };
  systemClockOffset?: number;
}

/** Per client and bucket: the endpoint and signing scope, resolved once (null: the bucket needs the SDK's command). */
const targets = new WeakMap<S3Client, Map<string, Promise<DirectTarget | null>>>();

export interface DirectPutInput {
  Bucket: string;
  Key: string;
  ContentType?: string;
  ContentDisposition?: string;
  ContentLength: number;
}

/**
 * PUTs `body` (exactly `ContentLength` bytes: a stream, or a buffer sent in one write) as the object, signed with an
 * unsigned payload as the SDK signs a streamed body. Rejects with an S3ServiceException named after S3's error code
 * (NoSuchBucket, AccessDenied, ...) when S3 refuses it, or with the handler's error when the request fails or
 * `abortSignal` aborts it.
 */
export async function putObjectDirect(s3: S3Client, input: DirectPutInput, body: Readable | Buffer, abortSignal?: AbortSignal): Promise<void> {
  const target = await targetOf(s3, input.Bucket);
  if (!target) {
    await s3.send(new PutObjectCommand({ ...input, Body: body }), { abortSignal });
    return;
  }
  const config = s3.config as unknown as ClientParts;
  const { url } = target;
  const headers: Record<string, string> = {
    host: url.host,
    'content-length': String(input.ContentLength),
    'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
  };
  if (input.ContentType !== undefined) headers['content-type'] = input.ContentType;
  if (input.ContentDisposition !== undefined) headers['content-disposition'] = input.ContentDisposition;
  const request = {
    method: 'PUT',
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: `${url.pathname.replace(/\/$/, '')}/${input.Key.split('/').map(encodeSegment).join('/')}`,
    query: {},
    headers,
    body,
  };
  sigV4(request, target, await config.credentials(), new Date(Date.now() + (config.systemClockOffset ?? 0)));
  const { response } = await config.requestHandler.handle(request, { abortSignal });
  const chunks: Buffer[] = [];
  for await (const chunk of response.body) chunks.push(chunk);
  if (response.statusCode >= 200 && response.statusCode < 300) return;
  throw s3Error(config, response, Buffer.concat(chunks).toString('utf8'));
}

function targetOf(s3: S3Client, bucket: string): Promise<DirectTarget | null> {
  let byBucket = targets.get(s3);
  if (!byBucket) targets.set(s3, (byBucket = new Map()));
  let target = byBucket.get(bucket);
  if (!target) {
    target = resolveTarget(s3.config as unknown as ClientParts, bucket);
    // A failure (credentials, region) is not kept: the next put resolves again.
    target.catch(() => byBucket.delete(bucket));
    byBucket.set(bucket, target);
  }
  return target;
}

async function resolveTarget(config: ClientParts, bucket: string): Promise<DirectTarget | null> {
  if (bucket.startsWith('arn:')) return null;
  const endpoint = config.endpoint ? await config.endpoint() : undefined;
  const resolved = config.endpointProvider(
    {
      Bucket: bucket,
      Region: await config.region(),
      UseFIPS: await config.useFipsEndpoint(),
      UseDualStack: await config.useDualstackEndpoint(),
      ForcePathStyle: config.forcePathStyle ?? false,
      Accelerate: config.useAccelerateEndpoint ?? false,
      ...(endpoint && { Endpoint: `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ''}${endpoint.path}` }),
    },
    {},
  );
  const scheme = resolved.properties?.authSchemes?.[0];
  // Only plain SigV4 (not sigv4a, not S3 Express's session auth), and no endpoint headers to add.
  if (!scheme || scheme.name !== 'sigv4' || !scheme.signingName || !scheme.signingRegion || Object.keys(resolved.headers ?? {}).length) return null;
  return { url: resolved.url, signingName: scheme.signingName, signingRegion: scheme.signingRegion };
}

/** Signing keys by credentials object (the provider hands out a new one when it refreshes), then by scope. */
const signingKeys = new WeakMap<Credentials, Map<string, Buffer>>();

/**
 * Signs the request in place with AWS Signature Version 4 (the Authorization header), as AWS documents it for S3:
 * every header the request carries is signed (all of them are ours: host, length, type, disposition, the payload
 * hash, the date and the session token), the path as sent (S3 does not normalise it or encode it again), an empty
 * query, the unsigned payload. Headers added after signing (traceparent) are not signed, as with the SDK's signer.
 */
function sigV4(request: { method: string; path: string; headers: Record<string, string> }, target: DirectTarget, credentials: Credentials, now: Date): void {
  const { headers } = request;
  const amzDate = now.toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  headers['x-amz-date'] = amzDate;
  if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
  const names = Object.keys(headers).sort();
  let canonicalHeaders = '';
  for (const name of names) canonicalHeaders += `${name}:${headers[name]!.trim().replace(/\s+/g, ' ')}\n`;
  const signedHeaders = names.join(';');
  const canonical = `${request.method}\n${request.path}\n\n${canonicalHeaders}\n${signedHeaders}\n${headers['x-amz-content-sha256']}`;
  const scope = `${day}/${target.signingRegion}/${target.signingName}/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
  const signature = createHmac('sha256', signingKey(credentials, day, target)).update(toSign).digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
}

/** The day's signing key (the HMAC chain of date, region, service and "aws4_request"), made once per day and scope. */
function signingKey(credentials: Credentials, day: string, target: DirectTarget): Buffer {
  let byScope = signingKeys.get(credentials);
  if (!byScope) signingKeys.set(credentials, (byScope = new Map()));
  const scope = `${day}/${target.signingRegion}/${target.signingName}`;
  let key = byScope.get(scope);
  if (!key) {
    const hmac = (k: string | Buffer, data: string) => createHmac('sha256', k).update(data).digest();
    key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), target.signingRegion), target.signingName), 'aws4_request');
    // A long-lived process signs with one scope a day: the previous days' keys go.
    byScope.clear();
    byScope.set(scope, key);
  }
  return key;
}

/** A key's path segment as S3 expects it in the request (RFC 3986: everything but unreserved characters escaped). */
function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** S3's error answer as the SDK reports it: named after its Code, with the status in $metadata. */
function s3Error(config: ClientParts, response: HandledResponse, xml: string): S3ServiceException {
  const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
  const code = field('Code') ?? `Http${response.statusCode}`;
  if (code === 'RequestTimeTooSkewed' || code === 'RequestExpired') {
    // As the SDK does on a skewed clock: later signatures carry the server's time (this put is retried by its caller).
    const serverTime = Date.parse(response.headers.date ?? '');
    if (Number.isFinite(serverTime)) config.systemClockOffset = serverTime - Date.now();
  }
  return new S3ServiceException({
    name: code,
    $fault: response.statusCode >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: response.statusCode, requestId: response.headers['x-amz-request-id'] },
    message: field('Message') ?? `S3 answered ${response.statusCode} to a PutObject`,
  });
}
