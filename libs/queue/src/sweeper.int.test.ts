import { createLogger } from '@gensvc/observability';
import { eventually, useTestContext } from '@gensvc/testing';
import { createRedisConnection } from './connection';
import { startSweeper } from './sweeper';

const ctx = useTestContext();
const logger = createLogger({ service: 'sweeper-test', level: 'silent' });

describe('startSweeper', () => {
  it('sweeps as it starts, then once per interval', async () => {
    const redis = createRedisConnection(ctx.env.REDIS_URL!, { name: 'test:sweeper' });
    const prefix = ctx.env.QUEUE_PREFIX!;
    let sweeps = 0;
    const sweeper = startSweeper({
      name: 'at-start',
      redis,
      prefix,
      intervalMs: 60_000,
      logger,
      sweep: async () => void sweeps++,
    });
    try {
      // A minute's interval: only the start's sweep can have run.
      expect(await eventually(async () => sweeps || undefined, 'the sweep at start')).toBe(1);
      expect(await redis.get(`${prefix}:sweep:at-start`)).toBe(String(process.pid));
      await new Promise((r) => setTimeout(r, 300));
      expect(sweeps).toBe(1);
    } finally {
      await sweeper.stop();
      await redis.del(`${prefix}:sweep:at-start`);
      redis.disconnect();
    }
  });

  it('skips the start sweep while another replica holds the round, and the next ones follow the interval', async () => {
    const redis = createRedisConnection(ctx.env.REDIS_URL!, { name: 'test:sweeper' });
    const prefix = ctx.env.QUEUE_PREFIX!;
    const key = `${prefix}:sweep:held`;
    await redis.set(key, 'another replica', 'PX', 250);
    let sweeps = 0;
    const sweeper = startSweeper({
      name: 'held',
      redis,
      prefix,
      intervalMs: 400,
      logger,
      sweep: async () => void sweeps++,
    });
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect(sweeps).toBe(0);
      // The lock expired at 250 ms; the timer's next round (at ~400 ms) takes it.
      expect(await eventually(async () => sweeps || undefined, 'the sweep of the next interval')).toBe(1);
    } finally {
      await sweeper.stop();
      await redis.del(key);
      redis.disconnect();
    }
  });
});
