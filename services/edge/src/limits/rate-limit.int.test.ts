import { useTestContext } from '@gensvc/testing';
import { takeSlot } from './rate-limit';

const ctx = useTestContext();

describe('takeSlot (sliding window in Redis)', () => {
  it('accepts exactly the limit when 500 calls race, on several connections', async () => {
    const { createRedisConnection } = await import('@gensvc/queue');
    const conns = [ctx.redis, createRedisConnection(ctx.config.redisUrl, { name: 'rl-2' }), createRedisConnection(ctx.config.redisUrl, { name: 'rl-3' })];
    const key = `${ctx.config.queuePrefix}:rl:test:race`;
    const decisions = await Promise.all(Array.from({ length: 500 }, (_, i) => takeSlot(conns[i % 3]!, key, 300, 60_000)));
    conns.slice(1).forEach((c) => c.disconnect());
    expect(decisions.filter((d) => d.accepted)).toHaveLength(300);
    const remaining = decisions.filter((d) => d.accepted).map((d) => d.remaining).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 300 }, (_, i) => i));
    const refused = decisions.filter((d) => !d.accepted);
    expect(refused.every((d) => d.remaining === 0 && d.resetAtMs > d.nowMs && d.resetAtMs <= d.nowMs + 60_000)).toBe(true);
  });

  it('slides: a slot frees when the oldest call leaves the window, not at a fixed boundary', async () => {
    const key = `${ctx.config.queuePrefix}:rl:test:slide`;
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
