import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import { useAction } from '../../api/use-api';
import { NewPasswordFields } from '../../components/new-password-fields';
import { ErrorNotice } from '../../components/notice';
import { PageHeader } from '../../components/page';
import { useSession } from '../../session';

export function AccountPage() {
  const { session, setSession } = useSession();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [note, setNote] = useState<string | null>(null);
  const change = useAction(api.session.changePassword);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setNote(null);
    if (next !== confirm) return setNote('The two new passwords differ.');
    const s = await change.call(current, next);
    if (!s) return;
    setSession(s);
    setCurrent('');
    setNext('');
    setConfirm('');
    setNote('Password changed. Every other session of yours was signed out.');
  };

  return (
    <>
      <PageHeader title="Account" description={session ? `Signed in as ${session.user.email}` : undefined} />
      <section className="card narrow">
        <h2>Change password</h2>
        <form onSubmit={submit}>
          <div className="field">
            <label htmlFor="current-password">Current password</label>
            <input
              id="current-password"
              className="input"
              type="password"
              autoComplete="current-password"
              required
              value={current}
              onChange={(e) => setCurrent(e.target.value)}
            />
          </div>
          <NewPasswordFields
            id="new"
            label="New password"
            repeatLabel="Repeat the new password"
            password={next}
            confirm={confirm}
            onPassword={setNext}
            onConfirm={setConfirm}
          />
          <ErrorNotice error={change.error} />
          {note ? (
            <p className="notice" role="status">
              {note}
            </p>
          ) : null}
          <button type="submit" className="button button-primary" disabled={change.pending}>
            {change.pending ? 'Saving…' : 'Change password'}
          </button>
        </form>
      </section>
    </>
  );
}
