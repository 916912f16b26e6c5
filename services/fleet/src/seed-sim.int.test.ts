// The sim's catalogue as `npm start` seeds it at every start: made once, pointed at the sim's current address at
// each later start, and an admin's changes to a seeded model (prices, added channels) kept.
import { channelRepository, modelRepository } from '@gensvc/db';
import { useTestContext } from '@gensvc/testing';
import { seedSim, SIM_CHANNELS, SIM_MODELS } from './seed-sim';

const ctx = useTestContext();

it('seeds the sim catalogue once, follows the sim to its new port, and keeps what an admin changed', async () => {
  await seedSim(ctx.db, ctx.secrets, 'http://127.0.0.1:8090');
  const channels = await channelRepository.list(ctx.db);
  expect(channels.map((c) => c.name).sort()).toEqual(SIM_CHANNELS.map((c) => c.name).sort());
  for (const c of channels) expect(c.baseUrl).toBe(`http://127.0.0.1:8090/ch/${c.name}`);
  const byName = new Map(channels.map((c) => [c.name, c.id]));
  for (const m of SIM_MODELS) {
    const model = await modelRepository.get(ctx.db, m.id);
    expect(model).toMatchObject({
      kind: m.kind,
      inputPricePerMTok: m.input,
      outputPricePerMTok: m.output,
      unitPrice: m.unitPrice ?? 0n,
    });
    expect(model!.routes.map((r) => [r.channel.name, r.upstreamModel]).sort()).toEqual(
      m.channels.map((name) => [name, m.upstreamModel ?? null]).sort(),
    );
  }

  // An admin reprices a model and serves it from one more channel of their own.
  const own = await channelRepository.create(ctx.db, ctx.secrets, {
    name: 'own-openai',
    kind: 'openai',
    baseUrl: 'https://llm.example.com',
  });
  const chat = await modelRepository.get(ctx.db, 'sim/chat-1');
  await modelRepository.update(ctx.db, 'sim/chat-1', {
    inputPricePerMTok: 7n,
    routes: [
      ...chat!.routes.map((r) => ({ channelId: r.channelId, upstreamModel: r.upstreamModel })),
      { channelId: own.id, upstreamModel: 'gpt-x' },
    ],
  });

  await seedSim(ctx.db, ctx.secrets, 'http://127.0.0.1:9191');
  const again = await channelRepository.list(ctx.db);
  expect(again).toHaveLength(SIM_CHANNELS.length + 1);
  for (const c of again.filter((c) => c.name !== 'own-openai')) {
    expect(c.id).toBe(byName.get(c.name));
    expect(c.baseUrl).toBe(`http://127.0.0.1:9191/ch/${c.name}`);
  }
  const kept = await modelRepository.get(ctx.db, 'sim/chat-1');
  expect(kept!.inputPricePerMTok).toBe(7n);
  expect(kept!.routes.map((r) => [r.channel.name, r.upstreamModel]).sort()).toEqual([
    ['own-openai', 'gpt-x'],
    ['sim-anthropic', null],
    ['sim-gemini', null],
    ['sim-openai', null],
  ]);
});
