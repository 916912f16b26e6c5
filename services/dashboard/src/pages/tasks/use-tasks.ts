import type { TaskStatus } from '../../api/types';
import { useApi } from '../../api/use-api';
import { useCursorList } from '../../api/use-cursor-list';
import { useWorkspace } from '../../workspace';

export function useTasks(status: TaskStatus | '') {
  const { id, api } = useWorkspace();
  return useCursorList(
    (after) => api.tasks.list({ status, ...(after ? { after } : {}), limit: 50 }),
    `${id}:${status}`,
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
