// The shared subscriber against a real Redis: one connection for every consumer, each told only its own channels'
// messages, and a consumer's cache trusted only while the shared subscription is live and confirmed.
import { eventually, useTestContext } from '@gensvc/testing';
import { randomUUID } from 'node:crypto';
import { createSubscriberConnection, primariesOf } from './connection';
import { SharedSubscriber } from './pub-sub';

const ctx = useTestContext();
const silent = { warn: () => {} };

function consumer() {
  const heard: string[] = [];
  const state = { live: false, heard };
  return {
    state,
    onMessage: (channel: string, message: string) => void heard.push(`${channel} ${message}`),
    setLive: (live: boolean) => {
      state.live = live;
    },
  };
}

/** The connections of this name (CLIENT LIST), on every primary of a cluster: each lists its own clients. */
async function clients(name: string) {
  const found: { kill: () => Promise<unknown> }[] = [];
  for (const node of primariesOf(ctx.redis)) {
    const list = (await node.call('CLIENT', 'LIST')) as string;
    for (const line of list.split('\n').filter((l) => l.includes(` name=${name} `))) {
      const id = /^id=(\d+)/.exec(line)![1]!;
      found.push({ kill: () => node.call('CLIENT', 'KILL', 'ID', id) });
    }
  }
  return found;
}

describe('SharedSubscriber', () => {
  // Each test's own connection name and channels.
  let name: string;
  let a: string;
  let b: string;
  let subscriber: SharedSubscriber;

  beforeEach(() => {
    name = `test-subscriber-${randomUUID().slice(0, 8)}`;
    [a, b] = [`${ctx.env.QUEUE_PREFIX}:${name}:a`, `${ctx.env.QUEUE_PREFIX}:${name}:b`];
    subscriber = new SharedSubscriber(createSubscriberConnection(ctx.env.REDIS_URL!, { name }), silent);
  });
  afterEach(() => subscriber.close());

  it('serves every consumer on one connection, each with its own channels only', async () => {
    const [one, two] = [consumer(), consumer()];
    await subscriber.listen([a], one);
    await subscriber.listen([b], two);
    expect(one.state.live && two.state.live).toBe(true);
    expect(await clients(name)).toHaveLength(1);

    await ctx.redis.publish(a, 'x');
    await ctx.redis.publish(b, 'y');
    await eventually(() => one.state.heard.length && two.state.heard.length, 'both messages');
    expect(one.state.heard).toEqual([`${a} x`]);
    expect(two.state.heard).toEqual([`${b} y`]);
  });

  it('distrusts every cache while the connection is down, and trusts it again once resubscribed', async () => {
    const [one, two] = [consumer(), consumer()];
    await subscriber.listen([a], one);
    await subscriber.listen([b], two);
    const [connection] = await clients(name);
    const seen: boolean[] = [];
    const watch = consumer();
    watch.setLive = (live) => void seen.push(live);
    await subscriber.listen([a], watch);
    seen.length = 0;

    await connection!.kill();
    await eventually(() => !one.state.live && !two.state.live, 'both caches distrusted');
    await eventually(() => one.state.live && two.state.live, 'both caches trusted again after the reconnect');
    // Trusted means subscribed: a message published now reaches each consumer.
    await ctx.redis.publish(a, 'after');
    await ctx.redis.publish(b, 'after');
    await eventually(() => one.state.heard.length && two.state.heard.length, 'the messages after the reconnect');
    expect(seen[0]).toBe(false);
    expect(seen.at(-1)).toBe(true);
  });

  it('stops one consumer without disturbing the others on the same channel or connection', async () => {
    const [one, two] = [consumer(), consumer()];
    const stopOne = await subscriber.listen([a], one);
    await subscriber.listen([a, b], two);
    await stopOne();
    expect(one.state.live).toBe(false);
    expect(two.state.live).toBe(true);

    await ctx.redis.publish(a, 'x');
    await eventually(() => two.state.heard.length, 'the message to the remaining consumer');
    await ctx.redis.publish(b, 'y');
    await eventually(() => two.state.heard.length === 2, 'the second message');
    expect(one.state.heard).toEqual([]);
    expect(two.state.heard).toEqual([`${a} x`, `${b} y`]);
  });

  it('closes: no consumer trusted, the connection gone', async () => {
    const one = consumer();
    await subscriber.listen([a], one);
    subscriber.close();
    expect(one.state.live).toBe(false);
    await eventually(async () => (await clients(name)).length === 0, 'the connection closed');
  });
});
