// When the task a submit job carries stands for the submit's read, as a table: every row is (the job's payload, its
// runs, its age) → the carried task or a read.
import type { CarriedSubmit } from '@gensvc/contracts';
import { CARRIED_FRESH_MS } from '@gensvc/queue';
import { carriedTaskOf } from './handlers/task-submit';

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

const carried: CarriedSubmit = {
  status: 'queued',
  attempts: 0,
  model: 'sim/image-1',
  operation: 'text-to-image',
  input: { prompt: 'a lighthouse at dusk', width: 1024, height: 768 },
  createdAt: NOW - 40,
  deadlineAt: NOW + 1_800_000,
};
const payload = { taskId: 'tsk_1', workspaceId: 'ws_1', carried };
const firstRun = { attemptsStarted: 1, attemptsMade: 0, stalledCounter: 0, timestamp: NOW - 15 };

type Payload = { taskId: string; workspaceId?: string; carried?: CarriedSubmit };
type Job = typeof firstRun;
type Row = [what: string, payload: Payload, job: Job, carriedUsed: boolean];

const rows: Row[] = [
  ['a fresh first run of a job the creation made', payload, firstRun, true],
  ['… added CARRIED_FRESH_MS ago, still', payload, { ...firstRun, timestamp: NOW - CARRIED_FRESH_MS }, true],
  ['… with no deadline', { ...payload, carried: { ...carried, deadlineAt: null } }, firstRun, true],
  ['a job that waited longer: the task may have been canceled since', payload, { ...firstRun, timestamp: NOW - CARRIED_FRESH_MS - 1 }, false],
  ['a second run (the first may have submitted before it died)', payload, { ...firstRun, attemptsStarted: 2 }, false],
  ['a retry after no channel took the task', payload, { ...firstRun, attemptsStarted: 2, attemptsMade: 1 }, false],
  ['a stalled job taken again', payload, { ...firstRun, stalledCounter: 1 }, false],
  ['a job with nothing carried (the reconciler’s, or a v1 payload)', { taskId: 'tsk_1', workspaceId: 'ws_1' }, firstRun, false],
  ['a job whose envelope names no workspace', { taskId: 'tsk_1', carried }, firstRun, false],
];

describe('carriedTaskOf', () => {
  it.each(rows)('%s', (_what, p, job, carriedUsed) => {
    const task = carriedTaskOf(p, job, NOW);
    if (!carriedUsed) return expect(task).toBeNull();
    // The row as a read gives it back: the creation's columns, no provider job, no output.
    expect(task).toEqual({
      id: 'tsk_1',
      workspaceId: 'ws_1',
      status: 'queued',
      upstreamId: null,
      attempts: 0,
      output: null,
      model: 'sim/image-1',
      operation: 'text-to-image',
      input: { prompt: 'a lighthouse at dusk', width: 1024, height: 768 },
      createdAt: new Date(NOW - 40),
      deadlineAt: p.carried!.deadlineAt === null ? null : new Date(NOW + 1_800_000),
    });
  });
});
