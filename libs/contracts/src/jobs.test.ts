import { z } from 'zod';
import { ArchiveOutput, EvaluateRun, QUEUE_NAMES, TaskPoll, allJobs, defineJob, jobByName, jobsOnQueue } from './index';

describe('job contracts', () => {
  it('declares every job once, as domain.verb, on a known queue, and every queue carries at least one job', () => {
    const names = allJobs.map((j) => j.name);
    expect(new Set(names).size).toBe(names.length);
    for (const job of allJobs) {
      expect(job.name).toMatch(/^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*$/);
      expect(QUEUE_NAMES).toContain(job.queue);
      expect(Number.isInteger(job.version) && job.version >= 1).toBe(true);
      expect(jobByName(job.name)).toBe(job);
    }
    for (const queue of QUEUE_NAMES) expect(jobsOnQueue(queue).length).toBeGreaterThan(0);
    expect(
      jobsOnQueue('tasks')
        .map((j) => j.name)
        .sort(),
    ).toEqual(['task.cancel', 'task.deadline', 'task.poll', 'task.submit']);
  });

  it('puts the envelope in every payload and strips what the contract does not declare', () => {
    const parsed = TaskPoll.schema.parse({
      taskId: 'tsk_1',
      attempt: 2,
      workspaceId: 'ws_1',
      requestId: 'req_1',
      trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      task: { a: 'whole record' },
    });
    expect(parsed).toEqual({
      taskId: 'tsk_1',
      attempt: 2,
      workspaceId: 'ws_1',
      requestId: 'req_1',
      trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    expect(ArchiveOutput.schema.safeParse({ taskId: 'tsk_1', outputIndex: -1 }).success).toBe(false);
    expect(TaskPoll.schema.safeParse({ taskId: 'tsk_1', attempt: 1, trace: { traceparent: 1 } }).success).toBe(false);
  });

  it('lets a job narrow an envelope field: evaluate.run requires its request id', () => {
    const request = { state: 's', questions: { q1: { type: 'boolean', instructions: 'Is it?' } } };
    const base = {
      workspaceId: 'ws_1',
      apiKeyId: 'key_1',
      deadlineAt: 1,
      model: 'acme/judge',
      callId: 'evl_1',
      request,
      replyTo: 'gensvc:evaluate:reply:edge_1',
    };
    expect(EvaluateRun.schema.safeParse(base).success).toBe(false);
    expect(EvaluateRun.schema.parse({ ...base, requestId: 'req_1' })).toEqual({ ...base, requestId: 'req_1' });
  });

  it('refuses malformed declarations', () => {
    expect(() => defineJob({ queue: 'tasks', name: 'TaskSubmit', version: 1, schema: z.object({}) })).toThrow(
      /domain\.verb/,
    );
    expect(() => defineJob({ queue: 'tasks', name: 'task.submit', version: 0, schema: z.object({}) })).toThrow(
      /version/,
    );
    expect(() =>
      defineJob({ queue: 'nope' as 'tasks', name: 'task.submit', version: 1, schema: z.object({}) }),
    ).toThrow(/queue/);
  });
});
