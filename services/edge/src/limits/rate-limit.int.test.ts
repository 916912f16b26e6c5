import { useTestContext } from '@gensvc/testing';
import { SlotLeases, rateWindowKey, takeSlot, takeSlotPair } from './rate-limit';

const ctx = useTestContext();

describe('takeSlot (sliding window in Redis)', () => {
  it('accepts exactly the limit when 500 calls race, on several connections', async () => {
    const { createRedisConnection } = await import('@gensvc/queue');
    const conns = [
      ctx.redis,
      createRedisConnection(ctx.config.redisUrl, { name: 'rl-2' }),
      createRedisConnection(ctx.config.redisUrl, { name: 'rl-3' }),
    ];
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'race');
    const decisions = await Promise.all(
      Array.from({ length: 500 }, (_, i) => takeSlot(conns[i % 3]!, key, 300, 60_000)),
    );
    for (const c of conns.slice(1)) c.disconnect();
    expect(decisions.filter((d) => d.accepted)).toHaveLength(300);
    const remaining = decisions
      .filter((d) => d.accepted)
      .map((d) => d.remaining)
      .sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 300 }, (_, i) => i));
    const refused = decisions.filter((d) => !d.accepted);
    expect(refused.every((d) => d.remaining === 0 && d.resetAtMs > d.nowMs && d.resetAtMs <= d.nowMs + 60_000)).toBe(
      true,
    );
  });

  it('slides: a slot frees when the oldest call leaves the window, not at a fixed boundary', async () => {
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'slide');
    const window = 600;
    const first = await takeSlot(ctx.redis, key, 2, window);
    await new Promise((r) => setTimeout(r, 300));
    const second = await takeSlot(ctx.redis, key, 2, window);
    const third = await takeSlot(ctx.redis, key, 2, window);
    expect([first.accepted, second.accepted, third.accepted]).toEqual([true, true, false]);
    expect(third.resetAtMs).toBe(first.nowMs + window);
    await new Promise((r) => setTimeout(r, Math.max(0, first.nowMs + window - third.nowMs) + 30));
    const fourth = await takeSlot(ctx.redis, key, 2, window);
    const fifth = await takeSlot(ctx.redis, key, 2, window);
    expect([fourth.accepted, fifth.accepted]).toEqual([true, false]); // only the first call's slot freed
    expect(fifth.resetAtMs).toBe(second.nowMs + window);
  });
});

describe('SlotLeases (rate-limit slots leased in blocks)', () => {
  it('accepts exactly the limit across two replicas racing, with far fewer Redis calls than calls', async () => {
    const { createRedisConnection } = await import('@gensvc/queue');
    const other = createRedisConnection(ctx.config.redisUrl, { name: 'rl-replica-2' });
    const replicas = [new SlotLeases(ctx.redis), new SlotLeases(other)];
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'leased');
    const limit = 2000;
    const decisions = await Promise.all(
      Array.from({ length: 2600 }, (_, i) => replicas[i % 2]!.take(key, limit, 60_000)),
    );
    for (const r of replicas) r.close();
    other.disconnect();
    expect(decisions.filter((d) => d.accepted)).toHaveLength(limit);
    const redisCalls = replicas.reduce((n, r) => n + r.stats.redisCalls, 0);
    const leased = replicas.reduce((n, r) => n + r.stats.leased, 0);
    // While more than half the window was free, calls came from leases; near the limit each took its own slot.
    expect(leased).toBeGreaterThan(limit / 3);
    expect(redisCalls).toBeLessThan(2600 - leased + 1);
    expect(await ctx.redis.zcard(key)).toBeLessThanOrEqual(limit);
  });

  it('keeps the window exact: a leased slot counts a whole window after its use, unused slots go back', async () => {
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'leased-slide');
    const limit = 1000;
    const window = 1500;
    const slots = new SlotLeases(ctx.redis);
    const first = await slots.take(key, limit, window);
    expect(first.accepted).toBe(true);
    // One call used one slot of a lease of up to 32; the lease's others are held in Redis until the lease ends...
    const held = await ctx.redis.zcard(key);
    expect(held).toBeGreaterThan(1);
    // ...then the unused ones go back: only the used slot counts.
    await new Promise((r) => setTimeout(r, 400));
    expect(await ctx.redis.zcard(key)).toBe(1);
    // The used slot is dated at the lease's end (200 ms after the grant), so it counts a whole window after the call
    // whenever in the lease the call was made.
    const [, score] = await ctx.redis.zrange(key, '0', '0', 'WITHSCORES');
    expect(Number(score)).toBe(first.nowMs + 200);
  });

  it('takes one slot per call below the lease threshold, as the exact per-call window does', async () => {
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'small');
    const slots = new SlotLeases(ctx.redis);
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await slots.take(key, 50, 60_000));
    expect(decisions.map((d) => d.remaining)).toEqual([49, 48, 47, 46, 45]);
    expect(slots.stats).toEqual({ redisCalls: 5, leased: 0 });
  });
});

describe("takeSlotPair (a key with its own limit, beside its workspace's)", () => {
  it("accepts the key's exact limit of 400 calls racing on three connections, counted for the workspace", async () => {
    const { createRedisConnection } = await import('@gensvc/queue');
    const conns = [
      ctx.redis,
      createRedisConnection(ctx.config.redisUrl, { name: 'rlp-2' }),
      createRedisConnection(ctx.config.redisUrl, { name: 'rlp-3' }),
    ];
    const ws = rateWindowKey(ctx.config.queuePrefix, 'test', 'pair');
    const keys = [
      rateWindowKey(ctx.config.queuePrefix, 'test', 'pair', 'pair-key-a'),
      rateWindowKey(ctx.config.queuePrefix, 'test', 'pair', 'pair-key-b'),
    ];
    // Key a: 40 a minute; key b: 70; the workspace: 300 — the keys bind.
    const decisions = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        takeSlotPair(conns[i % 3]!, ws, 300, keys[i % 2]!, i % 2 === 0 ? 40 : 70, 60_000).then((d) => ({
          ...d,
          k: i % 2,
        })),
      ),
    );
    for (const c of conns.slice(1)) c.disconnect();
    expect(decisions.filter((d) => d.accepted && d.k === 0)).toHaveLength(40);
    expect(decisions.filter((d) => d.accepted && d.k === 1)).toHaveLength(70);
    expect(decisions.filter((d) => !d.accepted).every((d) => d.binding === 'key' && d.remaining === 0)).toBe(true);
    expect([await ctx.redis.zcard(ws), await ctx.redis.zcard(keys[0]!), await ctx.redis.zcard(keys[1]!)]).toEqual([
      110, 40, 70,
    ]);
  });

  it("takes a slot in both windows or neither: a call the workspace refuses uses none of its key's", async () => {
    const ws = rateWindowKey(ctx.config.queuePrefix, 'test', 'pair-full');
    const key = rateWindowKey(ctx.config.queuePrefix, 'test', 'pair-full', 'pair-full-key');
    const decisions = await Promise.all(
      Array.from({ length: 60 }, () => takeSlotPair(ctx.redis, ws, 25, key, 100, 60_000)),
    );
    expect(decisions.filter((d) => d.accepted)).toHaveLength(25);
    expect(decisions.filter((d) => !d.accepted).every((d) => d.binding === 'workspace')).toBe(true);
    expect(await ctx.redis.zcard(key)).toBe(25);
  });
});
