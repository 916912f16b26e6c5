import type { UsageSplit } from '../../api/types';
import { useApi } from '../../api/use-api';
import { useWorkspace } from '../../workspace';

export function useUsage(split: UsageSplit, days = 30) {
  const { api } = useWorkspace();
  return useApi(() => api.usage(split, days), [api, split, days]);
}
