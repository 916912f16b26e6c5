import { useState } from 'react';
import type { CallbackSecret } from '../../api/types';
import { useAction } from '../../api/use-api';
import { CopyField } from '../../components/copy-field';
import { ConfirmDialog } from '../../components/dialog';
import { formatDateTime } from '../../components/format';
import { ErrorNotice } from '../../components/notice';
import { useCallbackSecret } from './use-tasks';

/** The workspace's callback signing secret (owners and admins): hidden until asked for. */
export function CallbackSecretPanel() {
  const calls = useCallbackSecret();
  const [secret, setSecret] = useState<CallbackSecret | null>(null);
  const [confirming, setConfirming] = useState<'rotate' | 'retire' | null>(null);
  const [retired, setRetired] = useState(false);
  const reveal = useAction(calls.reveal);
  const rotate = useAction(calls.rotate);
  const retire = useAction(calls.retirePrevious);

  return (
    <section className="card" aria-labelledby="callback-secret-title">
      <div className="card-head">
        <div>
          <h2 id="callback-secret-title">Callback signing secret</h2>
          <p className="muted small">
            Callbacks carry an HMAC signature made with this secret. After a rotation the old secret also signs for 24
            hours, unless it is retired sooner.
          </p>
        </div>
        <div className="page-actions">
          {!secret ? (
            <button
              type="button"
              className="button"
              disabled={reveal.pending}
              onClick={async () => setSecret((await reveal.call()) ?? null)}
            >
              Reveal secret
            </button>
          ) : (
            <button type="button" className="button" onClick={() => setSecret(null)}>
              Hide secret
            </button>
          )}
          <button type="button" className="button" onClick={() => setConfirming('rotate')}>
            Rotate secret
          </button>
          <button type="button" className="button" onClick={() => setConfirming('retire')}>
            Retire previous secret
          </button>
        </div>
      </div>
      <ErrorNotice error={reveal.error} />
      {secret ? (
        <>
          <CopyField label="Signing secret" value={secret.secret} secret />
          {secret.previous_expires_at ? (
            <p className="muted small">
              The previous secret still signs until {formatDateTime(secret.previous_expires_at)}.
            </p>
          ) : retired ? (
            <p className="muted small">
              The previous secret no longer signs: callbacks carry this secret's signature only.
            </p>
          ) : null}
        </>
      ) : null}
      {confirming === 'retire' ? (
        <ConfirmDialog
          title="Retire the previous secret"
          confirmLabel="Retire previous secret"
          pending={retire.pending}
          error={retire.error}
          onClose={() => setConfirming(null)}
          onConfirm={async () => {
            const s = await retire.call();
            if (!s) return;
            setSecret(s);
            setRetired(true);
            setConfirming(null);
          }}
        >
          <p>
            Callbacks stop carrying a signature made with the secret in use before the last rotation, at once instead of
            24 hours after it. Receivers still verifying with that secret reject them.
          </p>
        </ConfirmDialog>
      ) : null}
      {confirming === 'rotate' ? (
        <ConfirmDialog
          title="Rotate the signing secret"
          confirmLabel="Rotate secret"
          pending={rotate.pending}
          error={rotate.error}
          onClose={() => setConfirming(null)}
          onConfirm={async () => {
            const s = await rotate.call();
            if (!s) return;
            setSecret(s);
            setRetired(false);
            setConfirming(null);
          }}
        >
          <p>
            A new secret signs callbacks from now on; for 24 hours each callback carries a signature with the old one
            too, so receivers can switch without missing one.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
