import { useState, type FormEvent } from 'react';
import type { Key, KeyWithSecret } from '../../api/types';
import { useAction } from '../../api/use-api';
import { CopyField } from '../../components/copy-field';
import { ConfirmDialog, Dialog, DialogActions } from '../../components/dialog';
import { formatDate, formatDateTime, formatMoney, formatShortDateTime } from '../../components/format';
import { Empty, ErrorNotice, Loading } from '../../components/notice';
import { Badge, PageHeader } from '../../components/page';
import { SelectField } from '../../components/select-field';
import { Table } from '../../components/table';
import { useWorkspace } from '../../workspace';
import { SCOPES, useKeys } from './use-keys';

type Open =
  | { kind: 'create' }
  | { kind: 'rotate'; key: Key }
  | { kind: 'revoke'; key: Key }
  | { kind: 'secret'; made: KeyWithSecret; rotated: boolean }
  | null;

const EXPIRY = [
  { value: '', label: 'Never' },
  { value: '7', label: 'In 7 days' },
  { value: '30', label: 'In 30 days' },
  { value: '90', label: 'In 90 days' },
  { value: '365', label: 'In a year' },
];

const GRACE = [
  { value: 0, label: 'None: the old secret stops now' },
  { value: 3600, label: '1 hour' },
  { value: 86_400, label: '24 hours' },
  { value: 604_800, label: '7 days' },
];

export function KeysPage() {
  const { info } = useWorkspace();
  const keys = useKeys();
  const [open, setOpen] = useState<Open>(null);
  const currency = info.workspace.currency;
  const rows = keys.list.data ?? [];

  return (
    <>
      <PageHeader
        title="API keys"
        description={
          'Keys authenticate calls to the API. ' + 'A secret is shown once, when it is made: keep it somewhere safe.'
        }
        actions={
          <button type="button" className="button button-primary" onClick={() => setOpen({ kind: 'create' })}>
            Create new secret key
          </button>
        }
      />
      <ErrorNotice error={keys.list.error} />
      {keys.list.loading && !keys.list.data ? <Loading /> : null}
      {keys.list.data && rows.length === 0 ? (
        <Empty title="No API keys yet">Create one to call the API from your code.</Empty>
      ) : null}
      {rows.length > 0 ? (
        <Table
          columns={['Name and key', 'Scopes and limits', 'Spent / cap', 'Expires', 'Last used', 'Created by']}
          actions
        >
          {rows.map((k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td className="name-cell">
                <span className="strong block key-name">{k.name}</span>
                <span className="mono muted">{k.prefix}…</span>
                {k.previous_expires_at ? (
                  <span className="muted small block">
                    old secret works until {formatDateTime(k.previous_expires_at)}
                  </span>
                ) : null}
              </td>
              <td>
                <span className="scopes">{k.scopes.length === SCOPES.length ? 'All' : k.scopes.join(', ')}</span>
                {k.models.length ? (
                  <span className="muted small block key-models">models: {k.models.join(', ')}</span>
                ) : null}
                {k.rpm !== null ? <span className="muted small block key-rpm">{k.rpm} calls/min</span> : null}
              </td>
              <td className="nowrap">
                {formatMoney(k.spent, currency)}
                <span className="muted"> / {k.spend_cap === null ? 'no cap' : formatMoney(k.spend_cap, currency)}</span>
              </td>
              <td className="nowrap">{k.expires_at ? formatDate(k.expires_at) : 'Never'}</td>
              <td className="nowrap">{k.last_used_at ? formatShortDateTime(k.last_used_at) : 'Never'}</td>
              <td className="creator-cell">
                <CreatedBy k={k} />
              </td>
              <td className="actions">
                {k.status === 'active' ? (
                  <>
                    {k.can_rotate ? (
                      <button
                        type="button"
                        className="button button-small"
                        aria-label={`Rotate key ${k.name}`}
                        onClick={() => setOpen({ kind: 'rotate', key: k })}
                      >
                        Rotate
                      </button>
                    ) : null}
                    {k.can_revoke ? (
                      <button
                        type="button"
                        className="button button-small button-danger-quiet"
                        aria-label={`Revoke key ${k.name}`}
                        onClick={() => setOpen({ kind: 'revoke', key: k })}
                      >
                        Revoke
                      </button>
                    ) : null}
                  </>
                ) : (
                  <Badge value={k.status} />
                )}
              </td>
            </tr>
          ))}
        </Table>
      ) : null}

      {open?.kind === 'create' ? (
        <CreateKeyDialog
          onClose={() => setOpen(null)}
          onMade={(made) => setOpen({ kind: 'secret', made, rotated: false })}
          create={keys.create}
        />
      ) : null}
      {open?.kind === 'rotate' ? (
        <RotateDialog
          k={open.key}
          rotate={keys.rotate}
          onClose={() => setOpen(null)}
          onMade={(made) => setOpen({ kind: 'secret', made, rotated: true })}
        />
      ) : null}
      {open?.kind === 'revoke' ? (
        <RevokeDialog k={open.key} revoke={keys.revoke} onClose={() => setOpen(null)} />
      ) : null}
      {open?.kind === 'secret' ? (
        <Dialog title={open.rotated ? 'Your new secret key' : 'Save your key'} onClose={() => setOpen(null)}>
          <div className="dialog-body">
            <p>
              Save this secret somewhere safe. <strong>You will not be able to see it again</strong>; if you lose it,
              rotate the key.
            </p>
            <CopyField label="Secret key" value={open.made.secret} secret />
          </div>
          <div className="dialog-actions">
            <button type="button" className="button button-primary" onClick={() => setOpen(null)}>
              Done
            </button>
          </div>
        </Dialog>
      ) : null}
    </>
  );
}

/** Who made the key: a person's email, the platform CLI (for a member, or on its own), or a deleted person. */
function CreatedBy({ k }: { k: Key }) {
  const person = k.creator?.email ?? <span className="muted">Deleted user</span>;
  if (k.created_via === 'cli') return <span className="muted">CLI</span>;
  if (k.created_via === 'cli_for_member') {
    return (
      <>
        {person}
        <span className="muted small block">made with the CLI</span>
      </>
    );
  }
  return <>{person}</>;
}

function CreateKeyDialog({
  create,
  onClose,
  onMade,
}: {
  create: ReturnType<typeof useKeys>['create'];
  onClose: () => void;
  onMade: (made: KeyWithSecret) => void;
}) {
  const { info } = useWorkspace();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(SCOPES.map((s) => s.id));
  const [cap, setCap] = useState('');
  const [expiry, setExpiry] = useState('');
  const [models, setModels] = useState('');
  const [rpm, setRpm] = useState('');
  const action = useAction(create);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const days = Number(expiry);
    const made = await action.call({
      name: name.trim(),
      scopes,
      spend_cap: cap.trim() === '' ? null : Number(cap),
      expires_at: expiry ? new Date(Date.now() + days * 86_400_000).toISOString() : null,
      models: models
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean),
      rpm: rpm.trim() === '' ? null : Number(rpm),
    });
    if (made) onMade(made);
  };
  const toggle = (id: string, on: boolean) => setScopes((s) => (on ? [...s, id] : s.filter((x) => x !== id)));

  return (
    <Dialog title="Create new secret key" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <div className="field">
            <label htmlFor="key-name">Name</label>
            <input
              id="key-name"
              className="input"
              required
              maxLength={200}
              placeholder="My test key"
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          </div>
          <fieldset className="field">
            <legend>Scopes</legend>
            <div className="checks">
              {SCOPES.map((s) => (
                <label key={s.id} className="check">
                  <input
                    type="checkbox"
                    checked={scopes.includes(s.id)}
                    onChange={(e) => toggle(s.id, e.target.checked)}
                  />
                  <span>
                    {s.label} <span className="mono muted small">{s.id}</span>
                  </span>
                </label>
              ))}
            </div>
          </fieldset>
          <div className="field-row">
            <div className="field">
              <label htmlFor="key-cap">Spend cap ({info.workspace.currency}, optional)</label>
              <input
                id="key-cap"
                className="input"
                type="number"
                min="0"
                step="0.000001"
                inputMode="decimal"
                placeholder="No cap"
                value={cap}
                onChange={(e) => setCap(e.target.value)}
              />
            </div>
            <SelectField label="Expires" value={expiry} options={EXPIRY} onChange={setExpiry} />
          </div>
          <div className="field-row">
            <div className="field">
              <label htmlFor="key-models">Models (optional)</label>
              <input
                id="key-models"
                className="input"
                maxLength={4000}
                placeholder="All models"
                value={models}
                onChange={(e) => setModels(e.target.value)}
              />
              <span className="muted small">
                Comma-separated model ids, such as openai/gpt-4o-mini; the key may use only these.
              </span>
            </div>
            <div className="field">
              <label htmlFor="key-rpm">Calls per minute (optional)</label>
              <input
                id="key-rpm"
                className="input"
                type="number"
                min="1"
                step="1"
                inputMode="numeric"
                placeholder="Workspace limit"
                value={rpm}
                onChange={(e) => setRpm(e.target.value)}
              />
            </div>
          </div>
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions
          onCancel={onClose}
          label="Create secret key"
          pendingLabel="Creating…"
          pending={action.pending}
          disabled={scopes.length === 0}
        />
      </form>
    </Dialog>
  );
}

function RotateDialog({
  k,
  rotate,
  onClose,
  onMade,
}: {
  k: Key;
  rotate: ReturnType<typeof useKeys>['rotate'];
  onClose: () => void;
  onMade: (made: KeyWithSecret) => void;
}) {
  const [grace, setGrace] = useState(86_400);
  const action = useAction(rotate);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const made = await action.call(k.id, grace);
    if (made) onMade(made);
  };
  return (
    <Dialog title={`Rotate “${k.name}”`} onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <p>
            A new secret replaces the current one. During the grace period both work, so your deployments can switch
            over.
          </p>
          <SelectField label="Grace period for the old secret" value={grace} options={GRACE} onChange={setGrace} />
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions onCancel={onClose} label="Rotate key" pendingLabel="Rotating…" pending={action.pending} />
      </form>
    </Dialog>
  );
}

function RevokeDialog({
  k,
  revoke,
  onClose,
}: {
  k: Key;
  revoke: ReturnType<typeof useKeys>['revoke'];
  onClose: () => void;
}) {
  const action = useAction(revoke);
  return (
    <ConfirmDialog
      title="Revoke secret key"
      confirmLabel="Revoke key"
      danger
      pending={action.pending}
      error={action.error}
      onClose={onClose}
      onConfirm={async () => {
        if (await action.call(k.id)) onClose();
      }}
    >
      <p>
        Calls made with <strong>{k.name}</strong> (<span className="mono">{k.prefix}…</span>) will be refused from now
        on. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
