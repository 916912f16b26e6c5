// The `tasks` queue's worker: task.submit, task.poll, task.cancel and task.deadline, over the Replicate and fal
// protocols.
import { defineWorker } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { TaskRunnerDeps } from './deps';
import { taskCancel } from './handlers/task-cancel';
import { taskDeadline } from './handlers/task-deadline';
import { taskPoll } from './handlers/task-poll';
import type { TaskHandlerDeps } from './handlers/task-steps';
import { taskSubmit } from './handlers/task-submit';
import { createProviders } from './providers/providers';

/** What the handlers get: the runner's deps and the protocols over its one upstream client. */
export const handlerDepsOf = (deps: TaskRunnerDeps): TaskHandlerDeps => ({
  ...deps,
  providers: createProviders(deps.upstream),
});

export function startTaskWorker(deps: TaskRunnerDeps, concurrency = deps.config.concurrency.taskRunner): Worker {
  const handlerDeps = handlerDepsOf(deps);
  return defineWorker({
    queue: 'tasks',
    connection: deps.redis,
    prefix: deps.config.queuePrefix,
    concurrency,
    logger: deps.logger,
    handlers: {
      'task.submit': taskSubmit(handlerDeps),
      'task.poll': taskPoll(handlerDeps),
      'task.cancel': taskCancel(handlerDeps),
      'task.deadline': taskDeadline(handlerDeps),
    },
  });
}
