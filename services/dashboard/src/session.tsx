import { createContext, useContext } from 'react';
import type { Session } from './api/types';

export interface SessionState {
  session: Session | null;
  /** After sign-in, password change or accepting an invitation: the edge answered a fresh session. */
  setSession: (s: Session | null) => void;
}

export const SessionContext = createContext<SessionState>({ session: null, setSession: () => undefined });
export const useSession = () => useContext(SessionContext);
