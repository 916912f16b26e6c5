// ensureJob against real Redis: each of its four outcomes, and the job state each leaves.
import { TaskCancel, TaskPoll } from '@gensvc/contracts';
import { useTestContext } from '@gensvc/testing';
import { Worker } from 'bullmq';
import { bullPrefix, createQueues, enqueue, ensureJob, jobIdFor, type Queues } from './index';

const ctx = useTestContext();
let queues: Queues;
beforeAll(() => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
});
afterAll(() => queues.close());

const stateOf = async (id: string) => (await queues.get('tasks').getJob(id))?.getState();

it('adds a missing job, leaves a live one, promotes a delayed one when asked, replaces a finished one', async () => {
  const id = jobIdFor(TaskPoll, ['tsk_e', 1]);
  expect(await ensureJob(queues, TaskPoll, { taskId: 'tsk_e', attempt: 1 }, { delay: 60_000 })).toBe('added');
  expect(await stateOf(id)).toBe('delayed');
  // Live (delayed): left as it is, still delayed, unless promotion is asked for.
  expect(await ensureJob(queues, TaskPoll, { taskId: 'tsk_e', attempt: 1 })).toBe('exists');
  expect(await stateOf(id)).toBe('delayed');
  expect(await ensureJob(queues, TaskPoll, { taskId: 'tsk_e', attempt: 1 }, { promote: true })).toBe('promoted');
  expect(await stateOf(id)).toBe('waiting');

  // Finished (failed for good): replaced by a new job of the same id, which waits to run.
  await queues.get('tasks').drain(true);
  await enqueue(queues, TaskCancel, { taskId: 'tsk_f' }, { attempts: 1 });
  const prefix = bullPrefix(ctx.redis, ctx.config.queuePrefix);
  const taker = new Worker('tasks', null, { connection: ctx.redis, prefix, autorun: false });
  const taken = await taker.getNextJob('token-e');
  await taken!.moveToFailed(new Error('gave up'), 'token-e', false);
  await taker.close();
  const cancelId = jobIdFor(TaskCancel, ['tsk_f']);
  expect(await stateOf(cancelId)).toBe('failed');
  // Plain enqueue cannot bring it back: the id is taken by the failed job.
  await enqueue(queues, TaskCancel, { taskId: 'tsk_f' });
  expect(await stateOf(cancelId)).toBe('failed');
  expect(await ensureJob(queues, TaskCancel, { taskId: 'tsk_f' })).toBe('replaced');
  expect(await stateOf(cancelId)).toBe('waiting');
});
