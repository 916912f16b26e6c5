import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import { useAction } from '../../api/use-api';
import { ErrorNotice } from '../../components/notice';
import { BASE, Link, navigate, useLocation } from '../../router';
import { useSession } from '../../session';
import { landingPath } from './landing';
import { EmailField } from '../../components/email-field';

export function SignInPage() {
  const { setSession } = useSession();
  const { query } = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useAction(api.session.signIn);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const session = await signIn.call(email, password);
    if (!session) return;
    setSession(session);
    navigate(landingPath(session, query.get('next')), { replace: true });
  };

  return (
    <main className="auth-page">
      <form className="auth-card" onSubmit={submit} aria-labelledby="sign-in-title">
        <div className="brand brand-center">
          <span className="brand-mark" aria-hidden="true" />
          gensvc
        </div>
        <h1 id="sign-in-title">Welcome back</h1>
        <p className="muted">Sign in to manage your workspace’s keys, outputs and usage.</p>
        <EmailField value={email} onChange={setEmail} />
        <div className="field">
          <label htmlFor="password">Password</label>
          <input
            id="password"
            className="input"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        <ErrorNotice error={signIn.error} />
        <button type="submit" className="button button-primary button-block" disabled={signIn.pending}>
          {signIn.pending ? 'Signing in…' : 'Continue'}
        </button>
        <p className="small">
          <Link to={`${BASE}/forgot-password`}>Forgot your password?</Link>
        </p>
      </form>
    </main>
  );
}
