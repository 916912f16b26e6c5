import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import { useAction, useApi } from '../../api/use-api';
import { ROLE_LABEL, formatDateTime } from '../../components/format';
import { NewPasswordFields } from '../../components/new-password-fields';
import { ErrorNotice, Loading } from '../../components/notice';
import { BASE, Link, navigate, wsPath } from '../../router';
import { useSession } from '../../session';

/** `/dashboard/invite/<token>`: a new person sets a password; an existing user accepts while signed in as that user. */
export function InvitePage({ token }: { token: string }) {
  const { session, setSession } = useSession();
  const invitation = useApi(() => api.invitations.get(token), [token]);
  const accept = useAction((body: { password?: string; name?: string }) => api.invitations.accept(token, body));
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [mismatch, setMismatch] = useState(false);

  const done = async (body: { password?: string; name?: string }) => {
    const s = await accept.call(body);
    if (!s || !invitation.data) return;
    setSession(s);
    navigate(wsPath(invitation.data.workspace.id, 'outputs'), { replace: true });
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setMismatch(password !== confirm);
    if (password !== confirm) return;
    void done({ password, ...(name.trim() ? { name: name.trim() } : {}) });
  };

  const inv = invitation.data;
  const signedInAs = session?.user.email.toLowerCase();
  return (
    <main className="auth-page">
      <div className="auth-card">
        <div className="brand brand-center">
          <span className="brand-mark" aria-hidden="true" />
          gensvc
        </div>
        {invitation.loading ? <Loading label="Reading the invitation…" /> : null}
        {invitation.error ? (
          <>
            <h1>Invitation not found</h1>
            <ErrorNotice error={invitation.error} />
            <Link to={`${BASE}/sign-in`}>Go to sign in</Link>
          </>
        ) : null}
        {inv ? (
          <>
            <h1>Join {inv.workspace.name}</h1>
            <p className="muted">
              {inv.email} is invited as <strong>{ROLE_LABEL[inv.role] ?? inv.role}</strong>. The invitation expires{' '}
              {formatDateTime(inv.expires_at)}.
            </p>
            {!inv.user_exists ? (
              <form onSubmit={submit} aria-label="Create your account">
                <div className="field">
                  <label htmlFor="invite-email">Email address</label>
                  <input
                    id="invite-email"
                    className="input"
                    type="email"
                    autoComplete="username"
                    readOnly
                    value={inv.email}
                  />
                </div>
                <div className="field">
                  <label htmlFor="invite-name">Your name (optional)</label>
                  <input
                    id="invite-name"
                    className="input"
                    autoComplete="name"
                    maxLength={200}
                    value={name}
                    onChange={(e) => setName(e.target.value)}
                  />
                </div>
                <NewPasswordFields
                  id="invite"
                  label="Choose a password"
                  repeatLabel="Repeat the password"
                  password={password}
                  confirm={confirm}
                  onPassword={setPassword}
                  onConfirm={setConfirm}
                />
                {mismatch ? (
                  <div className="notice notice-error" role="alert">
                    The two passwords differ.
                  </div>
                ) : null}
                <ErrorNotice error={accept.error} />
                <button type="submit" className="button button-primary button-block" disabled={accept.pending}>
                  {accept.pending ? 'Joining…' : 'Create account and join'}
                </button>
              </form>
            ) : signedInAs === inv.email.toLowerCase() ? (
              <>
                <ErrorNotice error={accept.error} />
                <button
                  type="button"
                  className="button button-primary button-block"
                  disabled={accept.pending}
                  onClick={() => void done({})}
                >
                  {accept.pending ? 'Joining…' : `Join ${inv.workspace.name}`}
                </button>
              </>
            ) : (
              <>
                <p>
                  {session ? `You are signed in as ${session.user.email}. ` : ''}Sign in as {inv.email} to accept.
                </p>
                <Link
                  className="button button-primary button-block"
                  to={`${BASE}/sign-in?next=${encodeURIComponent(`${BASE}/invite/${token}`)}`}
                >
                  Sign in to accept
                </Link>
              </>
            )}
          </>
        ) : null}
      </div>
    </main>
  );
}
