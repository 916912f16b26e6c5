import { scheduleBackoff } from './backoff';
import { jobIdFor } from './queues';

describe('scheduleBackoff', () => {
  it('waits schedule[n-1] before the n-th retry and stops (-1) past the end of the schedule', () => {
    const strategy = scheduleBackoff([0, 30_000, 120_000]);
    expect([1, 2, 3, 4, 5].map((n) => strategy(n))).toEqual([0, 30_000, 120_000, -1, -1]);
  });

  it('refuses delays that are not whole milliseconds', () => {
    expect(() => scheduleBackoff([10, -1])).toThrow(/non-negative/);
    expect(() => scheduleBackoff([1.5])).toThrow(/non-negative/);
  });
});

describe('jobIdFor', () => {
  it('prefixes the job name and encodes what BullMQ forbids, one-to-one', () => {
    expect(jobIdFor({ name: 'task.poll' }, ['tsk_1', 3])).toBe('task.poll/tsk_1/3');
    expect(jobIdFor({ name: 'task.submit' }, 'a:b')).toBe('task.submit/a%3Ab');
    expect(jobIdFor({ name: 'task.submit' }, 'a/b')).not.toBe(jobIdFor({ name: 'task.submit' }, ['a', 'b']));
    expect(jobIdFor({ name: 'task.submit' }, '123')).toBe('task.submit/123');
    expect(() => jobIdFor({ name: 'task.submit' }, [])).toThrow(/empty/);
  });
});
