import { useId, type ReactNode } from 'react';
import { api } from '../api/client';
import { BASE, Link, navigate, wsPath } from '../router';
import { useSession } from '../session';
import { Icon } from './icons';

const NAV = [
  { page: 'outputs', label: 'Outputs' },
  { page: 'projects', label: 'Projects' },
  { page: 'tasks', label: 'Tasks' },
  { page: 'keys', label: 'API keys' },
  { page: 'members', label: 'Members' },
  { page: 'usage', label: 'Usage' },
] as const;

/** The frame of every signed-in page: workspace switcher, navigation, account. */
export function Shell({ page, ws, children }: { page: string; ws?: string; children: ReactNode }) {
  const { session, setSession } = useSession();
  const switcher = useId();
  const workspaces = session?.workspaces ?? [];
  const current = ws ?? workspaces[0]?.id;

  const signOut = async () => {
    try {
      await api.session.signOut();
    } finally {
      setSession(null);
      navigate(`${BASE}/sign-in`, { replace: true });
    }
  };

  return (
    <div className="layout">
      <aside className="sidebar">
        <Link to={`${BASE}/`} className="brand">
          <span className="brand-mark" aria-hidden="true" />
          gensvc
        </Link>
        {workspaces.length > 0 ? (
          <div className="field switcher">
            <label htmlFor={switcher} className="small muted">
              Workspace
            </label>
            <select
              id={switcher}
              className="input"
              value={current}
              onChange={(e) => navigate(wsPath(e.target.value, NAV.some((n) => n.page === page) ? page : 'outputs'))}
            >
              {workspaces.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </div>
        ) : null}
        {current ? (
          <nav aria-label="Workspace">
            <ul className="nav">
              {NAV.map((n) => (
                <li key={n.page}>
                  <Link
                    to={wsPath(current, n.page)}
                    className="nav-link"
                    aria-current={n.page === page ? 'page' : undefined}
                  >
                    <Icon name={n.page} />
                    {n.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        ) : null}
        <div className="sidebar-foot">
          <p className="small muted user-email" title={session?.user.email}>
            {session?.user.name || session?.user.email}
          </p>
          <Link to={`${BASE}/account`} className="nav-link" aria-current={page === 'account' ? 'page' : undefined}>
            <Icon name="account" />
            Account
          </Link>
          <button type="button" className="nav-link nav-button" onClick={signOut}>
            <Icon name="signout" />
            Sign out
          </button>
        </div>
      </aside>
      <main className="main" id="main">
        {children}
      </main>
    </div>
  );
}
