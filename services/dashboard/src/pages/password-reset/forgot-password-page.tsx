import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import { useAction } from '../../api/use-api';
import { ErrorNotice } from '../../components/notice';
import { BASE, Link } from '../../router';
import { EmailField } from '../../components/email-field';

/** `/dashboard/forgot-password`: asks for a link by mail. The edge answers alike whether the address has an account. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  const ask = useAction(api.passwordReset.request);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await ask.call(email.trim());
    if (r) setSent(r.message);
  };

  return (
    <main className="auth-page">
      <form className="auth-card" onSubmit={submit} aria-labelledby="forgot-title">
        <div className="brand brand-center">
          <span className="brand-mark" aria-hidden="true" />
          gensvc
        </div>
        <h1 id="forgot-title">Forgot your password?</h1>
        {sent ? (
          <p className="notice" role="status">
            {sent}
          </p>
        ) : (
          <>
            <p className="muted">We mail a link to set a new one to your address.</p>
            <EmailField value={email} onChange={setEmail} />
            <ErrorNotice error={ask.error} />
            <button type="submit" className="button button-primary button-block" disabled={ask.pending}>
              {ask.pending ? 'Sending…' : 'Send the link'}
            </button>
          </>
        )}
        <p className="small">
          <Link to={`${BASE}/sign-in`}>Back to sign in</Link>
        </p>
      </form>
    </main>
  );
}
