// The image of an image-to-* task given by URL is checked at creation, before any money is held (spec §4.4, §8): a
// real edge and Postgres, and a real HTTPS server (test CA, port 443 of a loopback address let through by
// OUTBOUND_ALLOW_CIDRS) serving good, wrong, huge and huge-dimension images. Only the header is read: the server's own
// count shows the connection closed long before the body it declared was sent.
import { jsonOf, makeCustomer, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { imageUrlHosts, startImageUrlServer, type ImageUrlServer } from '../images/image-url-test-server';
import { createTask, errorOf, IMAGE_PRICE, MODELS, seedTaskModels, workspaceState } from './tasks-test-support';

const hosts = imageUrlHosts();
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: `${hosts.host}/32,${hosts.deadHost}/32` });
let edge: EdgeUnderTest;
let refs: ImageUrlServer;
let c: Awaited<ReturnType<typeof makeCustomer>>;

beforeAll(async () => {
  refs = await startImageUrlServer(hosts);
  edge = await startEdge(ctx, { outbound: { ca: refs.tls.caPem } });
  await seedTaskModels(ctx.db);
  c = await makeCustomer(ctx.db);
});
afterAll(async () => {
  await edge?.close();
  await refs?.close();
});

const MiB = 1024 * 1024;
const image = { model: MODELS.image, prompt: 'a lighthouse' };

it('accepts an image URL whose header shows a supported type within the limits: 202, held and queued', async () => {
  const url = refs.url('/ok.png');
  const res = await createTask(edge.url, c.secret, 'sim/image-to-image', { ...image, image_url: url });
  const body = await jsonOf(res);
  expect(res.status).toBe(202);
  const task = await ctx.db.task.findUniqueOrThrow({ where: { id: body.task_id } });
  expect(task.input).toMatchObject({ image: { url } });
  expect(task.reserved).toBe(IMAGE_PRICE);
  // One GET, no HEAD.
  expect(refs.tls.requests.filter((r) => r.url === '/ok.png').map((r) => r.method)).toEqual(['GET']);
});

describe('refusals: 400 naming the rule, nothing held or written', () => {
  it.each<[string, string, string, number, string, string]>([
    ['a 9000 px wide PNG', 'sim/image-to-image', '/wide.png', 400, 'media_limit_exceeded', '[dimensions]'],
    ['a body declared over 30 MB', 'sim/image-to-video', '/declared-huge.png', 400, 'media_limit_exceeded', '[size]'],
    [
      'a body streamed past 30 MB without Content-Length',
      'sim/image-to-image',
      '/streamed-huge.png',
      400,
      'media_limit_exceeded',
      '[size]',
    ],
    ['a page that is not an image', 'sim/image-to-image', '/page.html', 400, 'invalid_image_url', '[type]'],
    ['a missing image (404)', 'sim/image-to-image', '/missing.png', 400, 'invalid_image_url', '[http_status]'],
  ])('%s (%s %s) → %d %s %s', async (_what, path, ref, status, code, rule) => {
    const video = path.endsWith('video');
    const before = await workspaceState(ctx.db, c.ws.id);
    const res = await createTask(edge.url, c.secret, path, {
      ...(video ? { model: MODELS.video, prompt: 'waves', duration_seconds: 3 } : image),
      image: refs.url(ref),
    });
    const error = await errorOf(res, status, code);
    expect(error.param).toBe('image');
    expect(error.message).toContain(rule);
    expect(await workspaceState(ctx.db, c.ws.id)).toEqual(before);
  });

  it('reads only the header of a refused image: the connection closes long before its 20 MB are sent', async () => {
    const res = await createTask(edge.url, c.secret, 'sim/image-to-image', { ...image, image: refs.url('/wide.png') });
    const error = await errorOf(res, 400, 'media_limit_exceeded');
    expect(error.message).toContain('9000×1 pixels');
    const pump = refs.pumps.get('/wide.png')!;
    await pump.closed;
    expect(pump.finished).toBe(false);
    // What the kernel's socket buffers took before the client closed: a few MiB at most, never the 20 MB.
    expect(pump.sent).toBeLessThan(8 * MiB);
  });

  it('refuses a declared 31 MB body on its headers alone', async () => {
    const res = await createTask(edge.url, c.secret, 'sim/image-to-image', {
      ...image,
      image: refs.url('/declared-huge.png'),
    });
    await errorOf(res, 400, 'media_limit_exceeded');
    const pump = refs.pumps.get('/declared-huge.png')!;
    await pump.closed;
    expect(pump.finished).toBe(false);
    expect(pump.sent).toBeLessThan(8 * MiB);
  });

  it.each<[string, string, string]>([
    ['a host where nothing listens', `https://${hosts.deadHost}/a.png`, '[unreachable]'],
    ['plain http', `http://${hosts.host}/ok.png`, '[scheme]'],
    ['a private address', 'https://10.0.0.1/a.png', '[private_address]'],
    ['another port', `https://${hosts.host}:8443/ok.png`, '[port]'],
  ])('%s → 400 invalid_image_url %s', async (_what, url, rule) => {
    const before = await workspaceState(ctx.db, c.ws.id);
    const res = await createTask(edge.url, c.secret, 'sim/image-to-image', { ...image, image_url: url });
    const error = await errorOf(res, 400, 'invalid_image_url');
    expect(error.param).toBe('image_url');
    expect(error.message).toContain(rule);
    expect(await workspaceState(ctx.db, c.ws.id)).toEqual(before);
  });
});
