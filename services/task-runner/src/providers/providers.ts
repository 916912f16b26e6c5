// The task protocols by channel kind: a model's routes to channels of these kinds are the ones a task can run on. The
// protocols themselves are in libs/upstream (task-providers/), where the edge's provider-webhooks route reads their
// webhooks with the same parsers.
import type { TaskChannelKind } from '@gensvc/contracts';
import { createFalProvider, createReplicateProvider, type TaskProvider, type UpstreamClient } from '@gensvc/upstream';

export { isTaskChannelKind, type TaskChannelKind } from '@gensvc/contracts';

export type TaskProviders = Record<TaskChannelKind, TaskProvider>;

export function createProviders(http: UpstreamClient): TaskProviders {
  return { replicate: createReplicateProvider(http), fal: createFalProvider(http) };
}
