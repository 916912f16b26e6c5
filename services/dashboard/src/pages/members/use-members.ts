import type { Role } from '../../api/types';
import { useApi } from '../../api/use-api';
import { useWorkspace } from '../../workspace';

export function useMembers() {
  const { api } = useWorkspace();
  const list = useApi(() => api.members.list(), [api]);
  return {
    list,
    add: async (email: string, role: Role) => {
      const r = await api.members.add(email, role);
      list.reload();
      return r;
    },
    setRole: async (userId: string, role: Role) => {
      const r = await api.members.setRole(userId, role);
      list.reload();
      return r;
    },
    remove: async (userId: string) => {
      await api.members.remove(userId);
      list.reload();
      return true;
    },
    resendInvitation: async (id: string) => {
      const r = await api.members.resendInvitation(id);
      list.reload();
      return r;
    },
    cancelInvitation: async (id: string) => {
      await api.members.cancelInvitation(id);
      list.reload();
      return true;
    },
  };
}
