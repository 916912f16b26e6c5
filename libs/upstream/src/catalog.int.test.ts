// The Catalog against real Postgres: a model or channel is read once per TTL, and an admin's change shows after it.
import { channelRepository, modelRepository, SecretBox } from '@gensvc/db';
import { useTestContext } from '@gensvc/testing';
import { Catalog } from './catalog';

const ctx = useTestContext();

it('serves a channel by id from its cache until the TTL passes, and null for one that does not exist', async () => {
  const channel = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'cat-a',
    kind: 'fal',
    baseUrl: 'http://127.0.0.1:9/a',
    secret: 'one',
  });
  let now = 0;
  const catalog = new Catalog(ctx.db, ctx.secrets, { ttlMs: 1_000, now: () => now });
  expect(await catalog.channel(channel.id)).toMatchObject({ id: channel.id, secret: 'one' });

  await ctx.db.channel.update({ where: { id: channel.id }, data: { secret: 'two' } });
  now = 999;
  expect(await catalog.channel(channel.id)).toMatchObject({ secret: 'one' });
  now = 1_000;
  expect(await catalog.channel(channel.id)).toMatchObject({ secret: 'two' });
  expect(await catalog.channel('ch_missing')).toBeNull();
});

it('keeps models and channels apart, each with its routes read with the model', async () => {
  const channel = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'cat-b',
    kind: 'replicate',
    baseUrl: 'http://127.0.0.1:9/b',
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/cat-model',
    kind: 'image',
    unitPrice: 1n,
    routes: [{ channelId: channel.id, upstreamModel: 'o/m' }],
  });
  const catalog = new Catalog(ctx.db, ctx.secrets);
  const model = await catalog.model('sim/cat-model');
  expect(model?.routes.map((r) => [r.channel.id, r.upstreamModel])).toEqual([[channel.id, 'o/m']]);
  // The same id asked as a channel is not the model's cached entry.
  expect(await catalog.channel('sim/cat-model')).toBeNull();
  expect(await catalog.model(channel.id)).toBeNull();
});

it("opens channels' sealed credentials as it reads them: once per cache fill, never per look-up", async () => {
  class CountingBox extends SecretBox {
    opened = 0;
    override open(stored: string, aad: string) {
      this.opened++;
      return super.open(stored, aad);
    }
  }
  const box = new CountingBox(ctx.config.encryptionKeys);
  // Routes come by their channel's priority: s1 first.
  const a = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'cat-s1',
    kind: 'openai',
    baseUrl: 'http://x.test',
    secret: 'sk-cat-s1',
    priority: 2,
  });
  const b = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'cat-s2',
    kind: 'openai',
    baseUrl: 'http://x.test',
    secret: 'sk-cat-s2',
    priority: 1,
  });
  expect(a.secret).toMatch(/^v1:/);
  for (const id of ['sim/cat-s1', 'sim/cat-s2'])
    await modelRepository.create(ctx.db, {
      id,
      kind: 'chat',
      routes: [{ channelId: a.id }, { channelId: b.id }],
    });
  const catalog = new Catalog(ctx.db, box, { ttlMs: 60_000 });
  for (let i = 0; i < 3; i++) expect(await catalog.channel(a.id)).toMatchObject({ secret: 'sk-cat-s1' });
  expect(box.opened).toBe(1);
  for (let i = 0; i < 3; i++) {
    const model = await catalog.model('sim/cat-s1');
    expect(model!.routes.map((r) => r.channel.secret)).toEqual(['sk-cat-s1', 'sk-cat-s2']);
  }
  expect(box.opened).toBe(3);
  // Every model in one read: a channel several models route to is opened once.
  const usable = (await catalog.usableModels()).filter((m) => m.id.startsWith('sim/cat-s'));
  expect(usable.flatMap((m) => m.routes.map((r) => r.channel.secret))).toEqual([
    'sk-cat-s1',
    'sk-cat-s2',
    'sk-cat-s1',
    'sk-cat-s2',
  ]);
  await catalog.usableModels();
  expect(box.opened).toBe(5);
});
