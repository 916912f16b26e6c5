// s3rver (the only S3-compatible server to be had here) implements no bucket policies: PutBucketPolicy answers
// NotImplemented and an unsigned request may read any object. So that tests can check what a deployment's bucket
// policy allows, this gateway sits in front of it and applies a policy document to anonymous requests, as S3 and
// MinIO do: an explicit Deny wins, an Allow for Principal "*" whose Action and Resource match lets it through,
// anything else is 403 AccessDenied. Signed requests (header or query) pass untouched; the store checks them (the
// Host header is kept, so signatures made for the gateway's address verify).
import { request, createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Principal: '*' | { AWS: string | string[] };
  Action: string | string[];
  Resource: string | string[];
}

export interface BucketPolicy {
  Version?: string;
  Statement: PolicyStatement[];
}

const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);
/** IAM wildcards: `*` any run of characters, `?` one character. */
const matches = (pattern: string, value: string) =>
  new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\/]/g, '\\$&')))
      .join('')}$`,
  ).test(value);
const isEveryone = (p: PolicyStatement['Principal']) => p === '*' || list(p.AWS).includes('*');

/** Whether `policy` lets an anonymous caller do `action` (e.g. s3:GetObject) on `resource` (an arn:aws:s3::: ARN). */
export function allowsAnonymous(policy: BucketPolicy, action: string, resource: string): boolean {
  const applies = (s: PolicyStatement) =>
    isEveryone(s.Principal) &&
    list(s.Action).some((a) => matches(a, action)) &&
    list(s.Resource).some((r) => matches(r, resource));
  const relevant = policy.Statement.filter(applies);
  return relevant.some((s) => s.Effect === 'Allow') && !relevant.some((s) => s.Effect === 'Deny');
}

const isSigned = (req: IncomingMessage) =>
  req.headers.authorization !== undefined || /[?&](X-Amz-Signature|Signature)=/i.test(req.url ?? '');

/** The S3 action and resource of a path-style request. */
function actionOf(method: string, path: string): { action: string; resource: string } {
  const [bucket = '', ...rest] = decodeURIComponent(path.split('?')[0]!.replace(/^\/+/, '')).split('/');
  const key = rest.join('/');
  if (!key)
    return {
      action: method === 'GET' || method === 'HEAD' ? 's3:ListBucket' : `s3:${method}Bucket`,
      resource: `arn:aws:s3:::${bucket}`,
    };
  const verb =
    method === 'GET' || method === 'HEAD'
      ? 'GetObject'
      : method === 'PUT' || method === 'POST'
        ? 'PutObject'
        : method === 'DELETE'
          ? 'DeleteObject'
          : method;
  return { action: `s3:${verb}`, resource: `arn:aws:s3:::${bucket}/${key}` };
}

export interface PolicyGateway {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** A gateway to the S3 server at `upstream` enforcing `policyOf(bucket)` (null: no policy, all anonymous refused). */
export async function startPolicyGateway(
  upstream: string,
  policyOf: (bucket: string) => BucketPolicy | null,
): Promise<PolicyGateway> {
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    const method = req.method ?? 'GET';
    if (!isSigned(req)) {
      const { action, resource } = actionOf(method, req.url ?? '/');
      const bucket = resource.replace(/^arn:aws:s3:::/, '').split('/')[0]!;
      const policy = policyOf(bucket);
      if (!policy || !allowsAnonymous(policy, action, resource)) {
        req.resume();
        res
          .writeHead(403, { 'content-type': 'application/xml' })
          .end(
            '<?xml version="1.0" encoding="UTF-8"?>\n' +
              '<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
          );
        return;
      }
    }
    const forwarded = request(
      { host: target.hostname, port: target.port, method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.writeHead(502).end());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
