import type { TaskStatus } from '../../api/types';
import { useApi } from '../../api/use-api';
import { useCursorList } from '../../api/use-cursor-list';
import { useWorkspace } from '../../workspace';

/** `version`: a change reloads the list from its first page (after a recovery, say). */
export function useTasks(status: TaskStatus | '', version = 0) {
  const { id, api } = useWorkspace();
  return useCursorList(
    (after) => api.tasks.list({ status, ...(after ? { after } : {}), limit: 50 }),
    `${id}:${status}:${version}`,
  );
}

export function useTask(taskId: string) {
  const { api } = useWorkspace();
  const task = useApi(() => api.tasks.get(taskId), [api, taskId]);
  return {
    task,
    redeliver: async () => {
      const r = await api.tasks.redeliver(taskId);
      task.reload();
      return r;
    },
  };
}

export function useCallbackSecret() {
  const { api } = useWorkspace();
  return {
    reveal: () => api.callbackSecret.get(),
    rotate: () => api.callbackSecret.rotate(),
    retirePrevious: () => api.callbackSecret.retirePrevious(),
  };
}

export function useCallbackTools() {
  const { api } = useWorkspace();
  return {
    recover: (since: string) => api.callbacks.recover(since),
    test: (url: string) => api.callbacks.test(url),
  };
}
