// The public /readyz and /healthz say whether the edge is up and ready, nothing more; why a store fails (a driver
// error naming an internal address) is told on the ops port only. Both are asked over real sockets.
import { S3Client } from '@aws-sdk/client-s3';
import { freePort } from '@gensvc/local-stack';
import { createMetrics, startOpsServer, type OpsServer } from '@gensvc/observability';
import { jsonOf, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { edgeReadinessChecks } from './readyz';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let ops: OpsServer;
let s3: S3Client;
let storeAddress = '';

beforeAll(async () => {
  // An S3 endpoint nothing listens on: the SDK's error names the address it could not reach.
  storeAddress = `127.0.0.1:${await freePort()}`;
  s3 = new S3Client({
    endpoint: `http://${storeAddress}`,
    region: ctx.config.s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: 'readyz-test', secretAccessKey: 'readyz-test' },
    maxAttempts: 1,
  });
  edge = await startEdge(ctx, { s3 });
  const checks = edgeReadinessChecks(edge.deps);
  ops = await startOpsServer({ port: 0, host: '127.0.0.1', metrics: createMetrics('edge-test'), checks });
});

afterAll(async () => {
  await ops.close();
  await edge.close();
  s3.destroy();
});

describe('health on the public port', () => {
  it('answers /readyz with the status only while a store fails; the ops port names it and its error', async () => {
    const pub = await fetch(`${edge.url}/readyz`);
    const pubText = await pub.text();
    expect(pub.status).toBe(503);
    expect(JSON.parse(pubText)).toEqual({
      error: {
        type: 'api_error',
        code: 'service_unavailable',
        message: expect.any(String),
        param: null,
        request_id: pub.headers.get('x-request-id'),
      },
      status: 'unavailable',
    });
    for (const leak of [storeAddress, 'ECONNREFUSED', 's3', ctx.config.s3.bucket]) expect(pubText).not.toContain(leak);

    const internal = await fetch(`http://127.0.0.1:${ops.port}/readyz`);
    expect(internal.status).toBe(503);
    const body = await jsonOf(internal);
    expect(body).toMatchObject({ status: 'unavailable', checks: { postgres: 'ok', redis: 'ok' } });
    expect(body.checks.s3).toContain('ECONNREFUSED');
    expect(body.checks.s3).toContain(storeAddress);
  });

  it('answers /healthz with the status only', async () => {
    const res = await fetch(`${edge.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ status: 'ok' });
  });
});
