import { useCallback } from 'react';
import { useApi } from '../../api/use-api';
import { useCursorList } from '../../api/use-cursor-list';
import { useWorkspace } from '../../workspace';

/** The workspace's projects, newest first (at most 1000, listed 100 a page). */
export function useProjects() {
  const { id, api } = useWorkspace();
  const list = useApi(async () => {
    const all = [];
    let after: string | undefined;
    for (;;) {
      const page = await api.projects.list(after);
      all.push(...page.data);
      if (!page.has_more || !page.last_id) return all;
      after = page.last_id;
    }
  }, [id]);
  const create = useCallback(
    async (name: string, description: string) => {
      const made = await api.projects.create(name, description);
      list.setData((prev) => [made, ...(prev ?? [])]);
      return made;
    },
    [api, list.setData],
  );
  return { list, create };
}

/** One project and its files, grown page by page. */
export function useProject(projectId: string) {
  const { id, api } = useWorkspace();
  const project = useApi(() => api.projects.get(projectId), [id, projectId]);
  const files = useCursorList((after) => api.projects.files(projectId, after ?? undefined), `${id}:${projectId}`);
  return {
    project,
    files,
    /** Detaches a file; the answer says when it goes now. */
    detach: async (fileId: string) => {
      const changed = await api.projects.detach(projectId, fileId);
      files.setItems((prev) => prev.filter((o) => o.id !== fileId));
      project.setData((p) => (p ? { ...p, file_count: p.file_count - 1 } : p));
      return changed;
    },
    remove: async () => {
      await api.projects.remove(projectId);
      return true;
    },
  };
}
