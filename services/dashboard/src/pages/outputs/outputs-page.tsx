import { useEffect, useState, type FormEvent } from 'react';
import type { Output, OutputKind, OutputSource } from '../../api/types';
import { useAction } from '../../api/use-api';
import { CloseButton, ConfirmDialog, Dialog, DialogActions } from '../../components/dialog';
import { formatBytes, formatDateTime, formatDuration, formatMoney } from '../../components/format';
import { LoadMore } from '../../components/load-more';
import { Empty, ErrorNotice } from '../../components/notice';
import { PageHeader } from '../../components/page';
import { SelectField } from '../../components/select-field';
import { Link, useLocation, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { AddToProjectDialog } from '../projects/add-to-project';
import { Expiry } from '../projects/expiry';
import { useOutputs, type OutputFilters } from './use-outputs';

const KINDS: { value: OutputKind | ''; label: string }[] = [
  { value: '', label: 'All kinds' },
  { value: 'image', label: 'Images' },
  { value: 'video', label: 'Videos' },
  { value: 'audio', label: 'Audio' },
  { value: 'document', label: 'Documents' },
];

export function OutputsPage() {
  const { id: ws, can } = useWorkspace();
  const { query } = useLocation();
  const source: OutputSource = query.get('source') === 'upload' ? 'upload' : 'generated';
  const [kind, setKind] = useState<OutputKind | ''>('');
  const [model, setModel] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  // Of the same shape as what the effect below sets, so that its first run asks for nothing new.
  const [applied, setApplied] = useState<OutputFilters>({ kind: '', model: '', from: '', to: '' });
  // Uploads have no model: the model filter (hidden on that tab) does not apply to them.
  const filters: OutputFilters = { source, ...applied, ...(source === 'upload' ? { model: '' } : {}) };
  const outputs = useOutputs(filters);
  const [selected, setSelected] = useState<Output | null>(null);
  const [deleting, setDeleting] = useState<Output | null>(null);
  const [takingDown, setTakingDown] = useState(false);
  const [takenDown, setTakenDown] = useState<string | null>(null);
  const [adding, setAdding] = useState<Output | null>(null);
  const [added, setAdded] = useState<string | null>(null);

  // The model filter is typed: it applies after a pause, the others at once.
  const appliedModel = applied.model ?? '';
  useEffect(() => {
    const t = setTimeout(() => setApplied({ kind, model: model.trim(), from, to }), model === appliedModel ? 0 : 350);
    return () => clearTimeout(t);
  }, [kind, model, from, to, appliedModel]);
  // Another tab shows other files: the preview closes.
  const [shownSource, setShownSource] = useState(source);
  if (shownSource !== source) {
    setShownSource(source);
    setSelected(null);
  }

  const tab = (s: OutputSource, label: string) => (
    <Link
      role="tab"
      aria-selected={source === s}
      className="tab"
      to={`${wsPath(ws, 'outputs')}${s === 'upload' ? '?source=upload' : ''}`}
    >
      {label}
    </Link>
  );

  return (
    <>
      <PageHeader
        title="Outputs"
        description="Generated images and videos of this workspace, newest first, and the files you uploaded."
        actions={
          can.delete_files && source === 'generated' ? (
            <button type="button" className="button" onClick={() => setTakingDown(true)}>
              Take down a public copy
            </button>
          ) : null
        }
      />
      {takenDown ? (
        <div className="notice" role="status">
          The public copy of <span className="mono">{takenDown}</span> is taken down.
        </div>
      ) : null}
      {added ? (
        <div className="notice" role="status">
          {added}
        </div>
      ) : null}
      <div className="tabs" role="tablist" aria-label="Library">
        {tab('generated', 'Generated')}
        {tab('upload', 'Uploads')}
      </div>
      <form className="filters" aria-label="Filter outputs" onSubmit={(e) => e.preventDefault()}>
        <SelectField label="Kind" value={kind} options={KINDS} onChange={setKind} />
        {source === 'generated' ? (
          <div className="field">
            <label htmlFor="filter-model">Model</label>
            <input
              id="filter-model"
              className="input"
              placeholder="e.g. sim/image-1"
              value={model}
              onChange={(e) => setModel(e.target.value)}
            />
          </div>
        ) : null}
        <div className="field">
          <label htmlFor="filter-from">From</label>
          <input
            id="filter-from"
            className="input"
            type="date"
            value={from}
            onChange={(e) => setFrom(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="filter-to">To</label>
          <input id="filter-to" className="input" type="date" value={to} onChange={(e) => setTo(e.target.value)} />
        </div>
      </form>
      <ErrorNotice error={outputs.error} />
      <div className={selected ? 'library with-pane' : 'library'}>
        <div>
          {!outputs.loading && outputs.items.length === 0 && !outputs.error ? (
            <Empty title={source === 'upload' ? 'No uploads' : 'No outputs yet'}>
              {source === 'upload'
                ? 'Files uploaded through the API appear here.'
                : 'Images and videos your tasks generate appear here.'}
            </Empty>
          ) : null}
          <ul className="grid" aria-label={source === 'upload' ? 'Uploads' : 'Generated outputs'}>
            {outputs.items.map((o) => (
              <li key={o.id}>
                <button
                  type="button"
                  className={selected?.id === o.id ? 'tile selected' : 'tile'}
                  aria-pressed={selected?.id === o.id}
                  onClick={() => setSelected(o)}
                  data-output-id={o.id}
                >
                  <Thumb o={o} />
                  <TileCaption o={o} />
                </button>
              </li>
            ))}
          </ul>
          <LoadMore list={outputs} />
        </div>
        {selected ? (
          <PreviewPane
            o={selected}
            canDelete={can.delete_files}
            onClose={() => setSelected(null)}
            onDelete={() => setDeleting(selected)}
            onAddToProject={() => setAdding(selected)}
          />
        ) : null}
      </div>
      {takingDown ? (
        <TakeDownDialog
          takeDown={outputs.takeDownPublicCopy}
          onClose={() => setTakingDown(false)}
          onDone={(fileId) => {
            setTakingDown(false);
            setTakenDown(fileId);
            if (selected?.id === fileId) setSelected(null);
          }}
        />
      ) : null}
      {adding ? (
        <AddToProjectDialog
          o={adding}
          onClose={() => setAdding(null)}
          onAdded={(changed, projectName) => {
            const update = (o: Output) =>
              o.id === changed.id ? { ...o, expires_at: changed.expires_at, projects: changed.projects } : o;
            outputs.setItems((prev) => prev.map(update));
            setSelected((s) => (s ? update(s) : s));
            setAdding(null);
            setAdded(`${adding.filename} is added to ${projectName} and kept while it is there.`);
          }}
        />
      ) : null}
      {deleting ? (
        <DeleteDialog
          o={deleting}
          remove={outputs.remove}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            setDeleting(null);
            setSelected(null);
          }}
        />
      ) : null}
    </>
  );
}

export function TileCaption({ o }: { o: Output }) {
  return (
    <span className="tile-caption">
      <span className="tile-title">{o.prompt || o.filename}</span>
      <span className="muted small">
        {o.model ?? o.content_type} · {formatDateTime(o.created_at)}
      </span>
    </span>
  );
}

export function Thumb({ o }: { o: Output }) {
  if (o.kind === 'image') return <img className="thumb" src={o.preview_url} alt="" loading="lazy" decoding="async" />;
  // No autoplay: the first frame (preload="metadata") is the poster.
  if (o.kind === 'video')
    return (
      <span className="thumb-wrap">
        <video
          className="thumb"
          src={o.preview_url}
          muted
          preload="metadata"
          playsInline
          aria-hidden="true"
          tabIndex={-1}
        />
        <span className="thumb-kind">
          <svg viewBox="0 0 10 10" width="8" height="8" aria-hidden="true">
            <path d="M2 1l7 4-7 4z" fill="currentColor" />
          </svg>
          Video{o.duration ? ` · ${formatDuration(o.duration)}` : ''}
        </span>
      </span>
    );
  return (
    <span className="thumb thumb-file" aria-hidden="true">
      {o.kind === 'audio' ? '♪' : o.filename.split('.').pop()?.toUpperCase().slice(0, 4)}
    </span>
  );
}

function PreviewPane({
  o,
  canDelete,
  onClose,
  onDelete,
  onAddToProject,
}: {
  o: Output;
  canDelete: boolean;
  onClose: () => void;
  onDelete: () => void;
  onAddToProject: () => void;
}) {
  const { id: ws } = useWorkspace();
  return (
    <aside className="pane" aria-label="Preview">
      <div className="pane-head">
        <h2>Preview</h2>
        <CloseButton label="Close the preview" onClick={onClose} />
      </div>
      <div className="pane-media">
        {o.kind === 'image' ? (
          <img src={o.preview_url} alt={o.prompt ? `Generated from: ${o.prompt}` : o.filename} />
        ) : null}
        {o.kind === 'video' ? (
          <video src={o.preview_url} controls muted preload="metadata" playsInline aria-label={`Video ${o.filename}`} />
        ) : null}
        {o.kind === 'audio' ? (
          // biome-ignore lint/a11y/useMediaCaption: generated audio has no caption file; its prompt is shown as text
          <audio src={o.preview_url} controls preload="metadata" aria-label={`Audio ${o.filename}`} />
        ) : null}
      </div>
      <dl className="details">
        {o.prompt ? (
          <>
            <dt>Prompt</dt>
            <dd className="prompt">{o.prompt}</dd>
          </>
        ) : null}
        <dt>Model</dt>
        <dd>{o.model ?? '—'}</dd>
        {o.size ? (
          <>
            <dt>Size</dt>
            <dd>{o.size}</dd>
          </>
        ) : null}
        {o.duration !== null ? (
          <>
            <dt>Duration</dt>
            <dd>{formatDuration(o.duration)}</dd>
          </>
        ) : null}
        <dt>Cost</dt>
        <dd>{o.cost ? formatMoney(o.cost.amount, o.cost.currency) : '—'}</dd>
        <dt>File</dt>
        <dd>
          {o.filename} · {o.content_type} · {formatBytes(o.bytes)}
        </dd>
        <dt>Created</dt>
        <dd>{formatDateTime(o.created_at)}</dd>
        <dt>Kept</dt>
        <dd className="file-expiry">
          <Expiry o={o} />
        </dd>
        {o.public_copy_expires_at ? (
          <>
            <dt>Public copy</dt>
            <dd>until {formatDateTime(o.public_copy_expires_at)}</dd>
          </>
        ) : null}
        {o.task_id ? (
          <>
            <dt>Task</dt>
            <dd>
              <Link to={wsPath(ws, `tasks/${encodeURIComponent(o.task_id)}`)} className="mono">
                {o.task_id}
              </Link>
            </dd>
          </>
        ) : null}
      </dl>
      <div className="pane-actions">
        <a className="button button-primary" href={o.download_url} download={o.filename}>
          Download
        </a>
        <button type="button" className="button" onClick={onAddToProject}>
          Add to project
        </button>
        {canDelete ? (
          <button type="button" className="button button-danger-quiet" onClick={onDelete}>
            Delete
          </button>
        ) : null}
      </div>
    </aside>
  );
}

function DeleteDialog({
  o,
  remove,
  onClose,
  onDeleted,
}: {
  o: Output;
  remove: (id: string) => Promise<boolean>;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const action = useAction(remove);
  return (
    <ConfirmDialog
      title="Delete output"
      confirmLabel="Delete"
      danger
      pending={action.pending}
      error={action.error}
      onClose={onClose}
      onConfirm={async () => (await action.call(o.id)) && onDeleted()}
    >
      <p>
        <strong>{o.filename}</strong> and its stored bytes are deleted for everyone in the workspace, its public copy
        too. Links already handed out stop working.
      </p>
    </ConfirmDialog>
  );
}

/**
 * Takes down a generated output's public copy by its file id (as in a task's output), also once its library entry
 * has expired and it is no longer listed here.
 */
function TakeDownDialog({
  takeDown,
  onClose,
  onDone,
}: {
  takeDown: (fileId: string) => Promise<boolean>;
  onClose: () => void;
  onDone: (fileId: string) => void;
}) {
  const [fileId, setFileId] = useState('');
  const action = useAction(takeDown);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const id = fileId.trim();
    if (await action.call(id)) onDone(id);
  };
  return (
    <Dialog title="Take down a public copy" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <p>
            The output's public link stops working and its stored bytes are deleted, with its library entry. This cannot
            be undone.
          </p>
          <div className="field">
            <label htmlFor="take-down-file">File id</label>
            <input
              id="take-down-file"
              className="input mono"
              required
              maxLength={64}
              placeholder="file_…"
              value={fileId}
              onChange={(e) => setFileId(e.target.value)}
            />
          </div>
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions
          onCancel={onClose}
          label="Take down"
          pendingLabel="Taking down…"
          pending={action.pending}
          danger
        />
      </form>
    </Dialog>
  );
}
