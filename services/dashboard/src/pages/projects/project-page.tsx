import { useState } from 'react';
import type { Output, ProjectFileChange } from '../../api/types';
import { useAction } from '../../api/use-api';
import { ConfirmDialog } from '../../components/dialog';
import { formatDate, formatDateTime } from '../../components/format';
import { LoadMore } from '../../components/load-more';
import { Empty, ErrorNotice } from '../../components/notice';
import { PageHeader } from '../../components/page';
import { Link, navigate, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { Thumb, TileCaption } from '../outputs/outputs-page';
import { useProject } from './use-projects';

/** One project: its files as the outputs grid shows them; members remove files, admins and owners delete it. */
export function ProjectPage({ projectId }: { projectId: string }) {
  const { id: ws, can } = useWorkspace();
  const { project, files, detach, remove } = useProject(projectId);
  const [removed, setRemoved] = useState<ProjectFileChange | null>(null);
  const [deleting, setDeleting] = useState(false);
  const detachAction = useAction(detach);
  const p = project.data;

  const removeFile = async (o: Output) => {
    const changed = await detachAction.call(o.id);
    if (changed) setRemoved(changed);
  };

  return (
    <>
      <p className="small">
        <Link to={wsPath(ws, 'projects')}>← All projects</Link>
      </p>
      <ErrorNotice error={project.error} />
      {p ? (
        <PageHeader
          title={p.name}
          description={
            <>
              {p.description ? `${p.description} · ` : ''}
              {p.file_count} {p.file_count === 1 ? 'file' : 'files'}, kept while here · created{' '}
              {formatDateTime(p.created_at)}
              {p.created_by ? ` by ${p.created_by.email}` : ''}
            </>
          }
          actions={
            can.delete_projects ? (
              <button type="button" className="button button-danger-quiet" onClick={() => setDeleting(true)}>
                Delete project
              </button>
            ) : null
          }
        />
      ) : null}
      {removed ? (
        <div className="notice" role="status">
          <strong>{removed.filename}</strong> is removed from the project.{' '}
          {removed.expires_at
            ? `Unless another project keeps it, it goes on ${formatDate(removed.expires_at)}.`
            : 'Another project still keeps it.'}
        </div>
      ) : null}
      <ErrorNotice error={files.error ?? detachAction.error} />
      {!files.loading && files.items.length === 0 && !files.error ? (
        <Empty title="No files in this project">
          Add outputs and uploads with “Add to project” on the Outputs page.
        </Empty>
      ) : null}
      <ul className="grid" aria-label="Project files">
        {files.items.map((o) => (
          <li key={o.id} className="tile project-tile" data-output-id={o.id}>
            <a href={o.download_url} download={o.filename} className="tile-link" aria-label={`Download ${o.filename}`}>
              <Thumb o={o} />
            </a>
            <TileCaption o={o} />
            <button
              type="button"
              className="button button-small"
              aria-label={`Remove ${o.filename} from the project`}
              disabled={detachAction.pending}
              onClick={() => void removeFile(o)}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <LoadMore list={files} />
      {deleting && p ? (
        <DeleteProjectDialog
          name={p.name}
          remove={remove}
          onClose={() => setDeleting(false)}
          onDeleted={() => navigate(wsPath(ws, 'projects'))}
        />
      ) : null}
    </>
  );
}

function DeleteProjectDialog({
  name,
  remove,
  onClose,
  onDeleted,
}: {
  name: string;
  remove: () => Promise<boolean>;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const action = useAction(remove);
  return (
    <ConfirmDialog
      title="Delete project"
      confirmLabel="Delete project"
      danger
      pending={action.pending}
      error={action.error}
      onClose={onClose}
      onConfirm={async () => (await action.call()) && onDeleted()}
    >
      <p>
        <strong>{name}</strong> is deleted; its files are not. Those no other project keeps go at the end of their
        retention, at the earliest 7 days from now.
      </p>
    </ConfirmDialog>
  );
}
