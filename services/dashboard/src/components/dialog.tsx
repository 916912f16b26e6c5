import { useEffect, useId, useRef, type ReactNode } from 'react';
import type { ApiError } from '../api/client';
import { ErrorNotice } from './notice';

export function CloseButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <button type="button" className="icon-button" aria-label={label} onClick={onClick}>
      <svg viewBox="0 0 20 20" width="18" height="18" aria-hidden="true">
        <path d="M5 5l10 10M15 5L5 15" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" />
      </svg>
    </button>
  );
}

/** A modal on the native <dialog>: focus trapped, Escape closes, the page behind is inert. */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <div className="dialog-head">
        <h2 id={titleId}>{title}</h2>
        <CloseButton label="Close" onClick={onClose} />
      </div>
      {children}
    </dialog>
  );
}

/** Cancel and the dialog's action: a submit button (in a form) unless `onConfirm` is given. */
export function DialogActions(props: {
  onCancel: () => void;
  label: string;
  pendingLabel?: string;
  pending?: boolean;
  disabled?: boolean;
  danger?: boolean;
  onConfirm?: () => void;
}) {
  return (
    <div className="dialog-actions">
      <button type="button" className="button" onClick={props.onCancel}>
        Cancel
      </button>
      <button
        type={props.onConfirm ? 'button' : 'submit'}
        className={props.danger ? 'button button-danger' : 'button button-primary'}
        disabled={props.pending || props.disabled}
        onClick={props.onConfirm}
      >
        {props.pending ? (props.pendingLabel ?? 'Working…') : props.label}
      </button>
    </div>
  );
}

export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  pending?: boolean;
  error?: ApiError | undefined;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <div className="dialog-body">{props.children}</div>
      <ErrorNotice error={props.error} />
      <DialogActions
        onCancel={props.onClose}
        label={props.confirmLabel}
        danger={props.danger}
        pending={props.pending}
        onConfirm={props.onConfirm}
      />
    </Dialog>
  );
}
