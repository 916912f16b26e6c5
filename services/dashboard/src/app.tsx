import { useEffect, useMemo, useState, type ReactElement } from 'react';
import { api, onUnauthorized } from './api/client';
import type { Session } from './api/types';
import { useApi } from './api/use-api';
import { Loading, ErrorNotice } from './components/notice';
import { Shell } from './components/shell';
import { AccountPage } from './pages/account/account-page';
import { InvitePage } from './pages/invite/invite-page';
import { KeysPage } from './pages/keys/keys-page';
import { MembersPage } from './pages/members/members-page';
import { OutputsPage } from './pages/outputs/outputs-page';
import { ProjectPage } from './pages/projects/project-page';
import { ProjectsPage } from './pages/projects/projects-page';
import { ForgotPasswordPage } from './pages/password-reset/forgot-password-page';
import { ResetPasswordPage } from './pages/password-reset/reset-password-page';
import { landingPath } from './pages/sign-in/landing';
import { SignInPage } from './pages/sign-in/sign-in-page';
import { TaskPage } from './pages/tasks/task-page';
import { TasksPage } from './pages/tasks/tasks-page';
import { UsagePage } from './pages/usage/usage-page';
import { BASE, navigate, useLocation, wsPath } from './router';
import { SessionContext } from './session';
import { WorkspaceContext } from './workspace';

const WORKSPACE_PAGES = ['outputs', 'projects', 'tasks', 'keys', 'members', 'usage'] as const;
type WorkspacePage = (typeof WORKSPACE_PAGES)[number];

const signInPath = () =>
  `${BASE}/sign-in?next=${encodeURIComponent(window.location.pathname + window.location.search)}`;

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const { path } = useLocation();

  useEffect(() => {
    onUnauthorized(() => {
      setSession(null);
      if (!window.location.pathname.startsWith(`${BASE}/sign-in`)) navigate(signInPath(), { replace: true });
    });
    api.session.get().then(setSession, () => setSession(null));
  }, []);

  const ctx = useMemo(() => ({ session: session ?? null, setSession }), [session]);
  if (session === undefined) return <Loading label="Loading the dashboard…" />;

  const rest = path.startsWith(BASE) ? path.slice(BASE.length) : path;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  let page: ReactElement;
  if (parts[0] === 'sign-in')
    page = session ? (
      <Redirect to={landingPath(session, new URLSearchParams(window.location.search).get('next'))} />
    ) : (
      <SignInPage />
    );
  else if (parts[0] === 'invite' && parts[1]) page = <InvitePage token={parts[1]} />;
  else if (parts[0] === 'forgot-password') page = <ForgotPasswordPage />;
  else if (parts[0] === 'reset-password' && parts[1]) page = <ResetPasswordPage token={parts[1]} />;
  else if (!session) page = <Redirect to={signInPath()} />;
  else if (parts[0] === 'account')
    page = (
      <Shell page="account">
        <AccountPage />
      </Shell>
    );
  else if (parts[0] === 'w' && parts[1]) page = <WorkspaceRoute ws={parts[1]} parts={parts.slice(2)} />;
  else page = <Home session={session} />;
  return <SessionContext.Provider value={ctx}>{page}</SessionContext.Provider>;
}

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function Home({ session }: { session: Session }) {
  const first = session.workspaces[0];
  if (first) return <Redirect to={wsPath(first.id, 'outputs')} />;
  return (
    <Shell page="account">
      <div className="empty">
        <h1>No workspace yet</h1>
        <p className="muted">
          You are not a member of any workspace. Ask a workspace owner or admin for an invitation.
        </p>
      </div>
    </Shell>
  );
}

function WorkspaceRoute({ ws, parts }: { ws: string; parts: string[] }) {
  const wsApi = useMemo(() => api.workspace(ws), [ws]);
  const info = useApi(() => wsApi.get(), [wsApi]);
  const name = parts[0] as WorkspacePage | undefined;
  if (!name || !WORKSPACE_PAGES.includes(name)) return <Redirect to={wsPath(ws, 'outputs')} />;
  const state = info.data
    ? { id: ws, info: info.data, role: info.data.role, can: info.data.permissions, api: wsApi }
    : null;
  let body: ReactElement;
  if (info.error) body = <ErrorNotice error={info.error} />;
  else if (!state) body = <Loading />;
  else if (name === 'outputs') body = <OutputsPage />;
  else if (name === 'projects') body = parts[1] ? <ProjectPage projectId={parts[1]} /> : <ProjectsPage />;
  else if (name === 'tasks') body = parts[1] ? <TaskPage taskId={parts[1]} /> : <TasksPage />;
  else if (name === 'keys') body = <KeysPage />;
  else if (name === 'members') body = <MembersPage />;
  else body = <UsagePage />;
  return (
    <WorkspaceContext.Provider value={state}>
      <Shell page={name} ws={ws}>
        {body}
      </Shell>
    </WorkspaceContext.Provider>
  );
}
