// Generated outputs are public, uploads are not: the bucket policy the deployments apply (infra/k8s/bucket, used by
// docker-compose.yml's bucket-init and the k8s Job gensvc-bucket-init) checked against this file's S3 bucket. s3rver
// enforces no policy (it answers PutBucketPolicy with NotImplemented and serves any object to anyone, shown below),
// so the policy is applied by a gateway in front of it (libs/testing startPolicyGateway) that evaluates the same
// document as S3 and MinIO do; FILE_BASE_URL points at the gateway, as a deployment's at the store's public host.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PutBucketPolicyCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createPresignS3, fileObjectKey, presignGetObject, PUBLIC_OUTPUTS_PREFIX } from './objects';
import { generatedOutputLocation } from './generated-output';
import {
  allowsAnonymous,
  rejectionOf,
  startPolicyGateway,
  useTestContext,
  type BucketPolicy,
  type PolicyGateway,
} from '@gensvc/testing';

const ROOT = resolve(__dirname, '../../..');
const ctx = useTestContext();

/** The policy exactly as infra/k8s/bucket/init.sh applies it: BUCKET replaced by the bucket's name. */
const policyFor = (bucket: string): BucketPolicy =>
  JSON.parse(
    readFileSync(join(ROOT, 'infra', 'k8s', 'bucket', 'outputs-policy.json'), 'utf8').replace(/BUCKET/g, bucket),
  );

let gateway: PolicyGateway;
beforeAll(async () => {
  gateway = await startPolicyGateway(ctx.env.S3_ENDPOINT!, (bucket) =>
    bucket === ctx.env.S3_BUCKET ? policyFor(bucket) : null,
  );
});
afterAll(() => gateway.close());

const put = (key: string, body: Buffer) =>
  ctx.s3.send(new PutObjectCommand({ Bucket: ctx.env.S3_BUCKET, Key: key, Body: body, ContentType: 'image/png' }));

it('allows anonymous GET of a generated output at its {file_url}; refuses an upload, a listing, a write', async () => {
  const bucket = ctx.env.S3_BUCKET!;
  // Where the archiver (and an image edit) put an output, and the public URL the task envelope gives for it.
  const output = generatedOutputLocation({
    secret: ctx.env.SIGNING_SECRET!,
    fileBaseUrl: gateway.url,
    bucket,
    workspaceId: 'ws_pub',
    taskId: 'tsk_pub',
    outputIndex: 0,
  });
  expect(output.storageKey.startsWith(PUBLIC_OUTPUTS_PREFIX)).toBe(true);
  expect(output.url).toBe(`${gateway.url}/${bucket}/${output.storageKey}`);
  const bytes = Buffer.from('the generated image');
  await put(output.storageKey, bytes);
  const got = await fetch(output.url);
  expect(got.status).toBe(200);
  expect(Buffer.from(await got.arrayBuffer())).toEqual(bytes);

  // An upload lives outside the public prefix: refused without credentials...
  const uploadKey = fileObjectKey('ws_pub', 'file_upload1');
  await put(uploadKey, Buffer.from('a private upload'));
  const refused = await fetch(`${gateway.url}/${bucket}/${uploadKey}`);
  expect(refused.status).toBe(403);
  expect(await refused.text()).toContain('<Code>AccessDenied</Code>');
  // ...but served through a presigned link made for FILE_BASE_URL's host (the edge's signed_url).
  const presigner = createPresignS3(ctx.config.s3, gateway.url);
  const signed = await fetch(await presignGetObject(presigner, bucket, uploadKey, { expiresInSeconds: 60 }));
  expect(signed.status).toBe(200);
  expect(await signed.text()).toBe('a private upload');
  presigner.destroy();

  expect((await fetch(`${gateway.url}/${bucket}`)).status).toBe(403); // no anonymous listing
  expect(
    (await fetch(`${gateway.url}/${bucket}/${output.storageKey}`, { method: 'PUT', body: 'overwrite' })).status,
  ).toBe(403);
  expect((await fetch(`${gateway.url}/${bucket}/${output.storageKey}`, { method: 'DELETE' })).status).toBe(403);
  expect(Buffer.from(await (await fetch(output.url)).arrayBuffer())).toEqual(bytes);
});

it('the policy document itself: GET on outputs/* for everyone, nothing else', () => {
  const policy = policyFor('gensvc');
  expect(allowsAnonymous(policy, 's3:GetObject', 'arn:aws:s3:::gensvc/outputs/ws_1/file_x')).toBe(true);
  expect(allowsAnonymous(policy, 's3:GetObject', 'arn:aws:s3:::gensvc/workspaces/ws_1/files/file_x')).toBe(false);
  expect(allowsAnonymous(policy, 's3:GetObject', 'arn:aws:s3:::gensvc/outputsx/file')).toBe(false);
  expect(allowsAnonymous(policy, 's3:GetObject', 'arn:aws:s3:::other/outputs/ws_1/file_x')).toBe(false);
  expect(allowsAnonymous(policy, 's3:PutObject', 'arn:aws:s3:::gensvc/outputs/ws_1/file_x')).toBe(false);
  expect(allowsAnonymous(policy, 's3:ListBucket', 'arn:aws:s3:::gensvc')).toBe(false);
  expect(policy.Statement).toHaveLength(1);
});

it('is needed: s3rver itself neither stores a policy nor refuses anonymous reads', async () => {
  const uploadKey = fileObjectKey('ws_pub', 'file_upload2');
  await put(uploadKey, Buffer.from('private?'));
  expect((await fetch(`${ctx.env.S3_ENDPOINT}/${ctx.env.S3_BUCKET}/${uploadKey}`)).status).toBe(200);
  const error = await rejectionOf(
    ctx.s3.send(
      new PutBucketPolicyCommand({ Bucket: ctx.env.S3_BUCKET, Policy: JSON.stringify(policyFor(ctx.env.S3_BUCKET!)) }),
    ),
  );
  expect((error as { name?: string }).name).toBe('NotImplemented');
});
