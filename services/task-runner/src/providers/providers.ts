// The task protocols by channel kind: a model's routes to channels of these kinds are the ones a task can run on.
import type { TaskChannelKind } from '@gensvc/contracts';
import type { UpstreamClient } from '@gensvc/upstream';
import { createFalProvider } from './fal';
import type { TaskProvider } from './provider';
import { createReplicateProvider } from './replicate';

export { TASK_CHANNEL_KINDS, isTaskChannelKind, type TaskChannelKind } from '@gensvc/contracts';

export type TaskProviders = Record<TaskChannelKind, TaskProvider>;

export function createProviders(http: UpstreamClient): TaskProviders {
  return { replicate: createReplicateProvider(http), fal: createFalProvider(http) };
}
