// Prefer's wait as RFC 7240 reads it, and the waits' map: every way a wait ends leaves no entry behind.
import type { ChannelConsumer } from '@gensvc/queue';
import { preferredWait, TaskWaits } from './task-waits';

describe('preferredWait', () => {
  it.each([
    ['wait', 60],
    ['wait=5', 5],
    ['WAIT = 7', 7],
    ['wait="9"', 9],
    ['respond-async, wait=12', 12],
    ['wait=0', 1],
    ['wait=61', 60],
    ['wait=999999999', 60],
    ['wait=3; foo=bar', 3],
    ['wait=4, wait=40', 4],
  ])('%s asks for %i s', (prefer, seconds) => expect(preferredWait(prefer)).toBe(seconds));

  it.each([undefined, '', 'respond-async', 'wait=', 'wait=soon', 'wait=-1', 'wait=2.5', 'waiting=5', 'wait=1e3'])(
    '%j asks for no wait',
    (prefer) => expect(preferredWait(prefer)).toBeUndefined(),
  );
});

describe('TaskWaits', () => {
  let consumer: ChannelConsumer | undefined;
  let unsubscribed = 0;
  const subscriber = {
    listen: async (channels: readonly string[], c: ChannelConsumer) => {
      expect(channels).toEqual(['p:tasks:finished']);
      consumer = c;
      return async () => void unsubscribed++;
    },
  };

  it('ends a wait at its notice, its timeout, its cancel or shutdown, and keeps no entry for any', async () => {
    const waits = await TaskWaits.connect(subscriber, 'p', 10);
    const finished = waits.register('tsk_a')!;
    const timedOut = waits.register('tsk_b')!;
    const left = waits.register('tsk_c')!;
    const shut = waits.register('tsk_d')!;
    expect({ size: waits.size, tasks: waits.tasks }).toEqual({ size: 4, tasks: 4 });

    const ends = [finished.until(5_000), timedOut.until(10), left.until(5_000), shut.until(5_000)];
    consumer!.onMessage('p:tasks:finished', 'tsk_other');
    consumer!.onMessage('p:tasks:finished', 'tsk_a');
    left.cancel();
    await ends[1];
    await waits.close();
    expect(await Promise.all(ends)).toEqual(['finished', 'timeout', 'gone', 'closed']);
    expect({ size: waits.size, tasks: waits.tasks, unsubscribed }).toEqual({ size: 0, tasks: 0, unsubscribed: 1 });
    // Shut: no new wait starts.
    expect(waits.register('tsk_e')).toBeNull();
  });

  it('says a wait may have missed its notice when the subscription was not live at some moment of it', async () => {
    const waits = await TaskWaits.connect(subscriber, 'p', 10);
    consumer!.setLive!(true);
    const steady = waits.register('tsk_steady')!;
    const dropped = waits.register('tsk_dropped')!;
    expect(dropped.mayHaveMissed()).toBe(false);
    consumer!.setLive!(false);
    expect(dropped.mayHaveMissed()).toBe(true);
    consumer!.setLive!(true);
    // Live again, but a notice sent while it was down is gone.
    expect(dropped.mayHaveMissed()).toBe(true);
    const after = waits.register('tsk_after')!;
    expect(after.mayHaveMissed()).toBe(false);
    consumer!.setLive!(false);
    const whileDown = waits.register('tsk_down')!;
    consumer!.setLive!(true);
    expect(whileDown.mayHaveMissed()).toBe(true);
    expect(steady.mayHaveMissed()).toBe(true);
    await waits.close();
  });

  it('holds at most its limit; a wait that ends frees its place', async () => {
    const waits = await TaskWaits.connect(subscriber, 'p', 2);
    const first = waits.register('tsk_1')!;
    expect(waits.register('tsk_2')).not.toBeNull();
    expect(waits.register('tsk_3')).toBeNull();
    first.cancel();
    first.cancel();
    expect(waits.size).toBe(1);
    expect(waits.register('tsk_3')).not.toBeNull();
    await waits.close();
  });
});
