// The task protocols by channel kind: a model's routes to channels of these kinds are the ones a task can run on.
import type { TaskChannelKind } from '@gensvc/contracts';
import { createFalProvider } from './fal';
import type { TaskProvider } from './provider';
import type { ProviderHttp } from './provider-http';
import { createReplicateProvider } from './replicate';

export { TASK_CHANNEL_KINDS, isTaskChannelKind, type TaskChannelKind } from '@gensvc/contracts';

export type TaskProviders = Record<TaskChannelKind, TaskProvider>;

export function createProviders(http: ProviderHttp): TaskProviders {
  return { replicate: createReplicateProvider(http), fal: createFalProvider(http) };
}
