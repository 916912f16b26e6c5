// The producers against real Redis: a callback due now waits to be taken, a retry waits out its delay.
import { CallbackDeliver } from '@gensvc/contracts';
import { useTestContext } from '@gensvc/testing';
import { createQueues, jobIdFor, scheduleCallback, type Queues } from './index';

const ctx = useTestContext();
let queues: Queues;
beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
});
afterAll(() => queues.close());

it('adds a callback due now as waiting and a retry as delayed, each under its deterministic id', async () => {
  const ref = { taskId: 'tsk_at_once', workspaceId: 'ws_at_once' };
  expect(await scheduleCallback(queues, ref, 1, { first: true })).toBe('added');
  expect(await scheduleCallback(queues, ref, 2, { delayMs: 60_000 })).toBe('added');

  const callbacks = queues.get(CallbackDeliver.queue);
  expect(await (await callbacks.getJob(jobIdFor(CallbackDeliver, [ref.taskId, 1])))?.getState()).toBe('waiting');
  expect(await (await callbacks.getJob(jobIdFor(CallbackDeliver, [ref.taskId, 2])))?.getState()).toBe('delayed');
});
