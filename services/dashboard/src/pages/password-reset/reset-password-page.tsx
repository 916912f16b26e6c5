import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import { useAction, useApi } from '../../api/use-api';
import { NewPasswordFields } from '../../components/new-password-fields';
import { ErrorNotice, Loading } from '../../components/notice';
import { BASE, Link } from '../../router';
import { useSession } from '../../session';

/**
 * `/dashboard/reset-password/<token>`: the mailed link. Setting the password signs the person out everywhere, this
 * browser included; they then sign in with it.
 */
export function ResetPasswordPage({ token }: { token: string }) {
  const { setSession } = useSession();
  const link = useApi(() => api.passwordReset.check(token), [token]);
  const set = useAction((password: string) => api.passwordReset.set(token, password).then(() => true));
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const [done, setDone] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setMismatch(password !== confirm);
    if (password !== confirm) return;
    if (await set.call(password)) {
      setSession(null);
      setDone(true);
    }
  };

  return (
    <main className="auth-page">
      <div className="auth-card">
        <div className="brand brand-center">
          <span className="brand-mark" aria-hidden="true" />
          gensvc
        </div>
        {link.loading ? <Loading label="Reading the link…" /> : null}
        {link.error ? (
          <>
            <h1>This link does not work</h1>
            <ErrorNotice error={link.error} />
            <Link to={`${BASE}/forgot-password`}>Ask for a new link</Link>
          </>
        ) : null}
        {link.data && done ? (
          <>
            <h1>Password set</h1>
            <p className="notice" role="status">
              Your new password is set, and every session of your account has been signed out.
            </p>
            <Link className="button button-primary button-block" to={`${BASE}/sign-in`}>
              Sign in
            </Link>
          </>
        ) : null}
        {link.data && !done ? (
          <form onSubmit={submit} aria-labelledby="reset-title">
            <h1 id="reset-title">Set a new password</h1>
            <NewPasswordFields
              id="reset"
              label="New password"
              repeatLabel="Repeat the new password"
              note="Setting it signs you out everywhere."
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
            <ErrorNotice error={set.error} />
            <button type="submit" className="button button-primary button-block" disabled={set.pending}>
              {set.pending ? 'Setting…' : 'Set password'}
            </button>
          </form>
        ) : null}
      </div>
    </main>
  );
}
