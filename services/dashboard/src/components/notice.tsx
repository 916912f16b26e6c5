import type { ApiError } from '../api/client';

export function ErrorNotice({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  return (
    <div className="notice notice-error" role="alert">
      <strong>{error.message}</strong>
      {error.requestId ? <span className="muted small"> Request {error.requestId}</span> : null}
    </div>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: React.ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <p className="muted">{children}</p> : null}
    </div>
  );
}
