import type { OutputQuery } from '../../api/types';
import { useCursorList } from '../../api/use-cursor-list';
import { useWorkspace } from '../../workspace';

export type OutputFilters = Omit<OutputQuery, 'after' | 'limit'>;

/** One filtered listing, grown page by page with the edge's cursor ("Load more"). */
export function useOutputs(filters: OutputFilters) {
  const { id, api } = useWorkspace();
  const list = useCursorList(
    (after) => api.outputs.list({ ...filters, ...(after ? { after } : {}), limit: 24 }),
    `${id}:${JSON.stringify(filters)}`,
  );
  return {
    ...list,
    remove: async (fileId: string) => {
      await api.outputs.remove(fileId);
      list.setItems((prev) => prev.filter((o) => o.id !== fileId));
      return true;
    },
    /** The public copy goes, and with it the library entry (it lives only while the copy does). */
    takeDownPublicCopy: async (fileId: string) => {
      await api.outputs.takeDownPublicCopy(fileId);
      list.setItems((prev) => prev.filter((o) => o.id !== fileId));
      return true;
    },
  };
}
