import { useState, type FormEvent } from 'react';
import type { Invitation, Member, Permissions, Role } from '../../api/types';
import { useAction } from '../../api/use-api';
import { ConfirmDialog } from '../../components/dialog';
import { ROLE_LABEL, formatDate, formatDateTime } from '../../components/format';
import { ErrorNotice, Loading } from '../../components/notice';
import { Badge, PageHeader } from '../../components/page';
import { SelectField } from '../../components/select-field';
import { Table } from '../../components/table';
import { useSession } from '../../session';
import { useWorkspace } from '../../workspace';
import { useMembers } from './use-members';

/** The roles this person may hand out, from what the edge says their role allows. */
const grantable = (can: Permissions): Role[] =>
  can.manage_owners ? ['member', 'admin', 'owner'] : can.manage_members ? ['member', 'admin'] : [];

export function MembersPage() {
  const { can, info } = useWorkspace();
  const { session } = useSession();
  const members = useMembers();
  const [removing, setRemoving] = useState<Member | null>(null);
  const [canceling, setCanceling] = useState<Invitation | null>(null);
  const manage = can.manage_members;
  const roles = grantable(can);
  const data = members.list.data;

  return (
    <>
      <PageHeader title="Members" description={`People with access to ${info.workspace.name}.`} />
      {manage ? <AddMember roles={roles} add={members.add} /> : null}
      <ErrorNotice error={members.list.error} />
      {members.list.loading && !data ? <Loading /> : null}
      {data ? (
        <section aria-labelledby="members-title">
          <h2 id="members-title" className="section-title">
            Members <span className="muted">({data.data.length})</span>
          </h2>
          <Table columns={['Name', 'Email', 'Role', 'Joined']} actions>
            {data.data.map((m) => (
              <MemberRow
                key={m.user.id}
                m={m}
                self={m.user.id === session?.user.id}
                roles={roles}
                setRole={members.setRole}
                onRemove={() => setRemoving(m)}
              />
            ))}
          </Table>
        </section>
      ) : null}
      {manage && data?.invitations && data.invitations.length > 0 ? (
        <section aria-labelledby="invitations-title">
          <h2 id="invitations-title" className="section-title">
            Pending invitations
          </h2>
          <Table columns={['Email', 'Role', 'Status', 'Expires']} actions>
            {data.invitations.map((i) => (
              <InvitationRow key={i.id} i={i} resend={members.resendInvitation} onRevoke={() => setCanceling(i)} />
            ))}
          </Table>
        </section>
      ) : null}
      {removing ? <RemoveDialog m={removing} remove={members.remove} onClose={() => setRemoving(null)} /> : null}
      {canceling ? (
        <CancelInvitationDialog i={canceling} cancel={members.cancelInvitation} onClose={() => setCanceling(null)} />
      ) : null}
    </>
  );
}

function InvitationRow({
  i,
  resend,
  onRevoke,
}: {
  i: Invitation;
  resend: ReturnType<typeof useMembers>['resendInvitation'];
  onRevoke: () => void;
}) {
  const action = useAction(resend);
  const [resent, setResent] = useState(false);
  return (
    <tr data-invitation-id={i.id}>
      <td>{i.email}</td>
      <td>
        <Badge value={i.role} label={ROLE_LABEL[i.role]} />
      </td>
      <td>
        {i.sends > 1 ? `Sent ${i.sends} times` : 'Sent'}
        {resent ? (
          <span className="muted small" role="status">
            {' '}
            — sent again
          </span>
        ) : null}
        <ErrorNotice error={action.error} />
      </td>
      <td>{formatDateTime(i.expires_at)}</td>
      <td className="actions">
        <button
          type="button"
          className="button button-small"
          aria-label={`Resend the invitation of ${i.email}`}
          disabled={action.pending}
          onClick={async () => setResent(Boolean(await action.call(i.id)))}
        >
          {action.pending ? 'Sending…' : 'Resend'}
        </button>
        <button
          type="button"
          className="button button-small button-danger-quiet"
          aria-label={`Revoke the invitation of ${i.email}`}
          onClick={onRevoke}
        >
          Revoke
        </button>
      </td>
    </tr>
  );
}

function MemberRow({
  m,
  self,
  roles,
  setRole,
  onRemove,
}: {
  m: Member;
  self: boolean;
  roles: Role[];
  setRole: ReturnType<typeof useMembers>['setRole'];
  onRemove: () => void;
}) {
  const change = useAction(setRole);
  // An admin cannot touch an owner; nobody is offered a role they cannot grant.
  const editable = roles.length > 0 && roles.includes(m.role);
  const label = m.user.name || m.user.email;
  return (
    <tr data-user-id={m.user.id}>
      <td className="strong">
        {m.user.name || <span className="muted">—</span>}
        {self ? <span className="muted small"> (you)</span> : null}
      </td>
      <td>{m.user.email}</td>
      <td>
        {editable ? (
          <>
            <select
              className="input input-small"
              aria-label={`Role of ${label}`}
              value={m.role}
              disabled={change.pending}
              onChange={(e) => void change.call(m.user.id, e.target.value as Role)}
            >
              {roles.map((r) => (
                <option key={r} value={r}>
                  {ROLE_LABEL[r]}
                </option>
              ))}
            </select>
            <ErrorNotice error={change.error} />
          </>
        ) : (
          <Badge value={m.role} label={ROLE_LABEL[m.role]} />
        )}
      </td>
      <td>{formatDate(m.created_at)}</td>
      <td className="actions">
        {editable ? (
          <button
            type="button"
            className="button button-small button-danger-quiet"
            aria-label={`Remove ${label}`}
            onClick={onRemove}
          >
            Remove
          </button>
        ) : null}
      </td>
    </tr>
  );
}

function AddMember({ roles, add }: { roles: Role[]; add: ReturnType<typeof useMembers>['add'] }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const action = useAction(add);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSentTo(null);
    const r = await action.call(email.trim(), role);
    if (!r) return;
    setSentTo(r.invitation.email);
    setEmail('');
  };
  return (
    <section className="card" aria-labelledby="add-member-title">
      <h2 id="add-member-title">Invite a member</h2>
      <p className="muted small">
        The invitation link goes by mail to the address, and only there. Whoever has the address joins by following it:
        a new person sets a password, someone with an account signs in first.
      </p>
      <form className="inline-form" onSubmit={submit}>
        <div className="field grow">
          <label htmlFor="member-email">Email address</label>
          <input
            id="member-email"
            className="input"
            type="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </div>
        <SelectField
          label="Role"
          value={role}
          options={roles.map((r) => ({ value: r, label: ROLE_LABEL[r] ?? r }))}
          onChange={setRole}
        />
        <button type="submit" className="button button-primary" disabled={action.pending}>
          {action.pending ? 'Sending…' : 'Send invitation'}
        </button>
      </form>
      <ErrorNotice error={action.error} />
      {sentTo ? (
        <p className="notice" role="status">
          Invitation sent to {sentTo}.
        </p>
      ) : null}
    </section>
  );
}

function RemoveDialog({
  m,
  remove,
  onClose,
}: {
  m: Member;
  remove: ReturnType<typeof useMembers>['remove'];
  onClose: () => void;
}) {
  const action = useAction(remove);
  return (
    <ConfirmDialog
      title="Remove member"
      confirmLabel="Remove member"
      danger
      pending={action.pending}
      error={action.error}
      onClose={onClose}
      onConfirm={async () => (await action.call(m.user.id)) && onClose()}
    >
      <p>
        <strong>{m.user.email}</strong> loses access to this workspace, and the API keys they created stop working.
      </p>
    </ConfirmDialog>
  );
}

function CancelInvitationDialog({
  i,
  cancel,
  onClose,
}: {
  i: Invitation;
  cancel: ReturnType<typeof useMembers>['cancelInvitation'];
  onClose: () => void;
}) {
  const action = useAction(cancel);
  return (
    <ConfirmDialog
      title="Revoke invitation"
      confirmLabel="Revoke invitation"
      danger
      pending={action.pending}
      error={action.error}
      onClose={onClose}
      onConfirm={async () => (await action.call(i.id)) && onClose()}
    >
      <p>The link sent to {i.email} will no longer work.</p>
    </ConfirmDialog>
  );
}
