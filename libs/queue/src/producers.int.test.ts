// The producers' socket writes against real Redis: a callback due now leaves at once, other adds wait for the turn's
// other writes (coalesceWrites).
import { CallbackDeliver } from '@gensvc/contracts';
import { useTestContext } from '@gensvc/testing';
import { createQueues, jobIdFor, scheduleCallback, type Queues } from './index';

const ctx = useTestContext();
let queues: Queues;
beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
});
afterAll(() => queues.close());

it("holds no callback due now for the turn's other writes, and holds a delayed attempt's add with them", async () => {
  await ctx.redis.ping(); // connected: a connection not yet open is never held
  const stream = (ctx.redis as unknown as { stream: { writableCorked: number } }).stream;
  const ref = { taskId: 'tsk_at_once', workspaceId: 'ws_at_once' };

  const due = scheduleCallback(queues, ref, 1, { first: true });
  // The add has been issued (its write is under way), and nothing holds the connection's writes.
  expect(stream.writableCorked).toBe(0);
  expect(await due).toBe('added');

  const retry = scheduleCallback(queues, ref, 2, { delayMs: 60_000 });
  // Held until the turn ends, with whatever else this turn sends on the connection.
  expect(stream.writableCorked).toBe(1);
  expect(await retry).toBe('added');
  expect(stream.writableCorked).toBe(0);

  const callbacks = queues.get(CallbackDeliver.queue);
  expect(await (await callbacks.getJob(jobIdFor(CallbackDeliver, [ref.taskId, 1])))?.getState()).toBe('waiting');
  expect(await (await callbacks.getJob(jobIdFor(CallbackDeliver, [ref.taskId, 2])))?.getState()).toBe('delayed');
});
