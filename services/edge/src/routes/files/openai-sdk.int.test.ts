// The official openai package against the edge over a real socket: files.create/list/retrieve/delete work as they
// do against OpenAI's own /v1/files.
import { makeKey, makeWorkspace, objectKeys, sampleMedia as sample, sha256, useTestContext } from '@gensvc/testing';
import OpenAI, { toFile } from 'openai';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let client: OpenAI;

beforeAll(async () => {
  edge = await startEdge(ctx);
  const ws = await makeWorkspace(ctx.db);
  const { secret } = await makeKey(ctx.db, ws.id, { scopes: ['files.write'] });
  client = new OpenAI({ apiKey: secret, baseURL: `${edge.url}/v1`, maxRetries: 0 });
});
afterAll(() => edge.close());

it('files.create, retrieve, list (auto-paging) and delete', async () => {
  const bytes = sample.png(32, 32);
  const created = await client.files.create({
    file: await toFile(bytes, 'diagram.png', { type: 'image/png' }),
    purpose: 'vision',
  });
  expect(created).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'diagram.png', purpose: 'vision' });
  expect(created.id).toMatch(/^file_/);
  const url = (created as unknown as { url: string }).url;
  expect(sha256(await (await fetch(url.replace(ctx.config.publicBaseUrl, edge.url))).arrayBuffer())).toBe(
    sha256(bytes),
  );

  const retrieved = await client.files.retrieve(created.id);
  expect(retrieved).toMatchObject({ id: created.id, bytes: bytes.length, filename: 'diagram.png' });

  const more = [];
  for (let i = 0; i < 4; i++)
    more.push(
      await client.files.create({ file: await toFile(sample.pdf(`doc ${i}`), `doc-${i}.pdf`), purpose: 'vision' }),
    );
  const seen: string[] = [];
  for await (const f of client.files.list({ limit: 2, order: 'asc' })) seen.push(f.id);
  expect(seen).toEqual([created.id, ...more.map((f) => f.id)]);
  const vision = await client.files.list({ purpose: 'vision', limit: 100 });
  expect(vision.data).toHaveLength(5);

  const deleted = await client.files.delete(created.id);
  expect(deleted).toEqual({ id: created.id, object: 'file', deleted: true });
  await expect(client.files.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  expect((await objectKeys(ctx.s3, ctx.config.s3.bucket)).some((k) => k.endsWith(created.id))).toBe(false);
});

it('errors reach the SDK as typed API errors', async () => {
  const e = await client.files
    .create({ file: await toFile(Buffer.from('plain text'), 'x.txt'), purpose: 'vision' })
    .catch((err) => err);
  expect(e).toBeInstanceOf(OpenAI.APIError);
  expect(e.status).toBe(415);
  expect(e.error).toMatchObject({ code: 'unsupported_media_type', type: 'invalid_request_error' });
  const unauthorized = new OpenAI({ apiKey: 'sk-not-a-key', baseURL: `${edge.url}/v1`, maxRetries: 0 });
  await expect(unauthorized.files.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
});
