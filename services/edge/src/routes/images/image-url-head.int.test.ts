// images/edits reads an image_url whole (its bytes go to the provider), but checks its header as it arrives: an image
// whose header shows 9000 px is refused there and its download stopped, before any money is held. A real edge and a
// real HTTPS server that counts what it sent; no provider is ever called (the channel points nowhere).
import { modelRepository } from '@gensvc/db';
import { addSimChannel, jsonOf, makeCustomer, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { workspaceState } from '../tasks/tasks-test-support';
import { imageUrlHosts, startImageUrlServer, type ImageUrlServer } from './image-url-test-server';

const hosts = imageUrlHosts();
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: `${hosts.host}/32` });
let edge: EdgeUnderTest;
let refs: ImageUrlServer;

beforeAll(async () => {
  refs = await startImageUrlServer(hosts);
  const channel = await addSimChannel(ctx.db, 'http://127.0.0.1:9', { name: 'nowhere', kind: 'openai' });
  await modelRepository.create(ctx.db, {
    id: 'sim/edit-1',
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: channel.id }],
  });
  edge = await startEdge(ctx, { outbound: { ca: refs.tls.caPem } });
});
afterAll(async () => {
  await edge?.close();
  await refs?.close();
});

it('refuses a 9000 px image_url on its header: 400 media_limit_exceeded, download cut early, none held', async () => {
  const c = await makeCustomer(ctx.db);
  const before = await workspaceState(ctx.db, c.ws.id);
  const res = await fetch(`${edge.url}/v1/images/edits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim/edit-1', prompt: 'x', image_url: refs.url('/wide.png') }),
  });
  const body = await jsonOf(res);
  expect({ status: res.status, code: body.error.code, param: body.error.param }).toEqual({
    status: 400,
    code: 'media_limit_exceeded',
    param: 'image_url',
  });
  expect(body.error.message).toContain('9000×1 pixels');
  const pump = refs.pumps.get('/wide.png')!;
  await pump.closed;
  expect(pump.finished).toBe(false);
  expect(pump.sent).toBeLessThan(8 * 1024 * 1024);
  expect(await workspaceState(ctx.db, c.ws.id)).toEqual(before);
});
