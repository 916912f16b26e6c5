// One streamed PutObject sent with the S3 client's own parts, without its per-command middleware stack (issue 12: the
// stack — serializer, user agent, endpoint rules, retry, checksum and deserializer middleware — was 1.2 of the 1.9 ms
// of client CPU a 60 KB streamed put cost, and a fifth of the archiver's CPU per task).
//
// What makes it a real S3 request is all the SDK's: the endpoint comes from the client's endpoint rules (the same
// `endpointProvider` a command calls, with the client's region, endpoint, path-style, FIPS, dual-stack and accelerate
// settings), the request is signed by the client's SigV4 signer (`config.signer`: its credentials provider, signing
// key cache and clock offset), and it is sent by the client's request handler (its agent, keep-alive and timeouts).
// What is left out is what a single streamed put does not use: a stream body is never retried by the SDK either, and
// no checksum is computed when checksums are WHEN_REQUIRED (createS3). A bucket whose endpoint rules ask for another
// signature (S3 Express directory buckets, multi-region access points, ARNs) goes through the SDK's command instead.
import type { Readable } from 'node:stream';
import { PutObjectCommand, S3ServiceException, type S3Client } from '@aws-sdk/client-s3';

interface DirectTarget {
  url: URL;
  signingRegion: string;
  signingName: string;
  signer: { sign(request: unknown, options: { signingDate: Date; signingRegion: string; signingService: string }): Promise<SignedRequest> };
}

interface SignedRequest {
  headers: Record<string, string>;
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
  signer: (authScheme: { name: string; signingName: string; signingRegion: string; properties: object }) => Promise<DirectTarget['signer']>;
  requestHandler: { handle(request: unknown, options: { abortSignal?: AbortSignal }): Promise<{ response: HandledResponse }> };
  systemClockOffset?: number;
}

/** Per client and bucket: the endpoint and signer, resolved once (null: the bucket needs the SDK's command). */
const targets = new WeakMap<S3Client, Map<string, Promise<DirectTarget | null>>>();

export interface DirectPutInput {
  Bucket: string;
  Key: string;
  ContentType?: string;
  ContentDisposition?: string;
  ContentLength: number;
}

/**
 * PUTs `body` (exactly `ContentLength` bytes) as the object, signed with an unsigned payload as the SDK signs a
 * streamed body. Rejects with an S3ServiceException named after S3's error code (NoSuchBucket, AccessDenied, ...)
 * when S3 refuses it, or with the handler's error when the request fails or `abortSignal` aborts it.
 */
export async function putObjectDirect(s3: S3Client, input: DirectPutInput, body: Readable, abortSignal?: AbortSignal): Promise<void> {
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
  const signed = await target.signer.sign(request, {
    signingDate: new Date(Date.now() + (config.systemClockOffset ?? 0)),
    signingRegion: target.signingRegion,
    signingService: target.signingName,
  });
  const { response } = await config.requestHandler.handle(signed, { abortSignal });
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
  const authScheme = { name: 'sigv4', signingName: scheme.signingName, signingRegion: scheme.signingRegion, properties: {} };
  return { url: resolved.url, signingName: scheme.signingName, signingRegion: scheme.signingRegion, signer: await config.signer(authScheme) };
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
