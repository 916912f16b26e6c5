import type { Session } from '../../api/types';
import { BASE, wsPath } from '../../paths';

/**
 * Where to go after signing in: the dashboard page that sent the person to sign in (`?next=`), else their first
 * workspace. Only a path of this app is followed: never another site (`//host`), never back to the sign-in page.
 */
export function landingPath(session: Pick<Session, 'workspaces'>, next: string | null): string {
  if (
    next?.startsWith(`${BASE}/`) &&
    !next.startsWith(`${BASE}/sign-in`) &&
    !next.includes('//') &&
    !next.includes('\\')
  )
    return next;
  const first = session.workspaces[0];
  return first ? wsPath(first.id, 'outputs') : `${BASE}/`;
}
