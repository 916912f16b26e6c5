// Job ids come from the contracts: every job of the pipeline declares its key, and the id a producer's job
// gets is derived from the payload, so two producers of one step always agree on it.
import {
  ArchiveOutput,
  CallbackDeliver,
  EvaluateRun,
  MailSend,
  TaskCancel,
  TaskPoll,
  TaskSubmit,
  allJobs,
  defineJob,
  type JobContract,
} from '@gensvc/contracts';
import { z } from 'zod';
import { jobIdOf } from './queues';

describe('job keys declared on the contracts', () => {
  it('every job but the repeatable maintenance ones declares its key', () => {
    const jobs: readonly JobContract[] = allJobs;
    const keyed = jobs
      .filter((j) => j.key !== undefined)
      .map((j) => j.name)
      .sort();
    expect(keyed).toEqual([
      'archive.output',
      'callback.deliver',
      'evaluate.run',
      'mail.send',
      'task.cancel',
      'task.deadline',
      'task.poll',
      'task.submit',
    ]);
    for (const j of jobs) if (j.queue === 'maintenance') expect(j.key).toBeUndefined();
  });

  it('derives the id from the payload: the job name, then each key part', () => {
    const ref = { taskId: 'tsk_1', workspaceId: 'ws_1', requestId: 'req_1' };
    expect(jobIdOf(TaskSubmit, ref)).toBe('task.submit/tsk_1');
    expect(jobIdOf(TaskCancel, ref)).toBe('task.cancel/tsk_1');
    expect(jobIdOf(TaskPoll, { ...ref, attempt: 3 })).toBe('task.poll/tsk_1/3');
    expect(jobIdOf(ArchiveOutput, { ...ref, outputIndex: 0 })).toBe('archive.output/tsk_1/0');
    expect(jobIdOf(CallbackDeliver, { ...ref, attempt: 6 })).toBe('callback.deliver/tsk_1/6');
    expect(jobIdOf(MailSend, { kind: 'password-reset', id: 'pwr_1', send: 2 })).toBe(
      'mail.send/password-reset/pwr_1/2',
    );
    const request = { state: 's', questions: { q: { type: 'boolean' as const, instructions: 'Is it?' } } };
    expect(
      jobIdOf(EvaluateRun, {
        requestId: 'req_1',
        workspaceId: 'ws_1',
        apiKeyId: 'key_1',
        callId: 'evl:1',
        deadlineAt: 1,
        model: 'a/b',
        request,
        replyTo: 'r',
      }),
    ).toBe('evaluate.run/evl%3A1');
  });

  it('the envelope never changes the id: one step, one job, whoever makes it', () => {
    const a = jobIdOf(CallbackDeliver, { taskId: 'tsk_1', attempt: 1 });
    const b = jobIdOf(CallbackDeliver, {
      taskId: 'tsk_1',
      attempt: 1,
      workspaceId: 'ws_1',
      requestId: 'req_9',
      trace: { traceparent: 'x' },
    });
    expect(a).toBe(b);
    expect(jobIdOf(CallbackDeliver, { taskId: 'tsk_1', attempt: 2 })).not.toBe(a);
  });

  it('a key may only read the job’s own fields (typed), and an empty key is refused', () => {
    const bad = defineJob({
      queue: 'tasks',
      name: 'task.nothing',
      version: 1,
      schema: z.object({ taskId: z.string() }),
      key: () => [],
    });
    expect(() => jobIdOf(bad, { taskId: 't' })).toThrow(/empty/);
  });
});
