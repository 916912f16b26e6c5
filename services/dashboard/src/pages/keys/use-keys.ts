import type { CreateKeyInput, Key } from '../../api/types';
import { useApi } from '../../api/use-api';
import { useWorkspace } from '../../workspace';

/** The workspace's keys (a member gets their own only: the edge decides) and the calls that change them. */
export function useKeys() {
  const { api } = useWorkspace();
  const list = useApi(() => api.keys.list().then((r) => r.data), [api]);
  const replace = (key: Key) => list.setData((keys) => (keys ?? []).map((k) => (k.id === key.id ? key : k)));
  return {
    list,
    create: async (input: CreateKeyInput) => {
      const made = await api.keys.create(input);
      list.setData((keys) => [made.key, ...(keys ?? [])]);
      return made;
    },
    rotate: async (id: string, graceSeconds: number) => {
      const rotated = await api.keys.rotate(id, graceSeconds);
      replace(rotated.key);
      return rotated;
    },
    revoke: async (id: string) => {
      const { key } = await api.keys.revoke(id);
      replace(key);
      return key;
    },
  };
}

/** The scopes a key can hold (README "Scopes"); the edge validates them. */
export const SCOPES: { id: string; label: string }[] = [
  { id: 'llm.evaluate', label: 'Evaluate' },
  { id: 'llm.chat', label: 'Chat' },
  { id: 'tasks.write', label: 'Create tasks' },
  { id: 'tasks.read', label: 'Read tasks' },
  { id: 'files.write', label: 'Upload and delete files' },
  { id: 'account.read', label: 'Read balance' },
];
