import type { ReactNode } from 'react';

export function PageHeader({
  title,
  description,
  actions,
}: {
  title: string;
  description?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {description ? <p className="muted">{description}</p> : null}
      </div>
      {actions ? <div className="page-actions">{actions}</div> : null}
    </header>
  );
}

const TONES: Record<string, string> = {
  active: 'green',
  completed: 'green',
  delivered: 'green',
  owner: 'violet',
  admin: 'blue',
  member: 'gray',
  running: 'blue',
  queued: 'gray',
  pending: 'gray',
  revoked: 'red',
  failed: 'red',
  parked: 'red',
  expired: 'amber',
  canceled: 'amber',
};

export function Badge({ value, label }: { value: string; label?: string }) {
  return <span className={`badge badge-${TONES[value] ?? 'gray'}`}>{label ?? value}</span>;
}
