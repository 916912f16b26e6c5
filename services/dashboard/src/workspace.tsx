import { createContext, useContext } from 'react';
import type { WorkspaceApi } from './api/client';
import type { Permissions, Role, WorkspaceInfo } from './api/types';

export interface WorkspaceState {
  id: string;
  info: WorkspaceInfo;
  role: Role;
  /** What the edge says this person's role allows; it enforces the same rules again on every call. */
  can: Permissions;
  api: WorkspaceApi;
}

export const WorkspaceContext = createContext<WorkspaceState | null>(null);

export function useWorkspace(): WorkspaceState {
  const ws = useContext(WorkspaceContext);
  if (!ws) throw new Error('useWorkspace outside a workspace page');
  return ws;
}
