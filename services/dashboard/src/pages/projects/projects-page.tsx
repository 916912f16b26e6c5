import { useState, type FormEvent } from 'react';
import type { Project } from '../../api/types';
import { useAction } from '../../api/use-api';
import { Dialog, DialogActions } from '../../components/dialog';
import { formatDateTime } from '../../components/format';
import { Empty, ErrorNotice, Loading } from '../../components/notice';
import { PageHeader } from '../../components/page';
import { Table } from '../../components/table';
import { Link, navigate, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { useProjects } from './use-projects';

export function ProjectsPage() {
  const { id: ws } = useWorkspace();
  const { list, create } = useProjects();
  const [creating, setCreating] = useState(false);
  const rows = list.data ?? [];
  return (
    <>
      <PageHeader
        title="Projects"
        description="Files attached to a project are kept past their 30 days for as long as a project holds them."
        actions={
          <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
            New project
          </button>
        }
      />
      <ErrorNotice error={list.error} />
      {list.loading && !list.data ? <Loading /> : null}
      {list.data && rows.length === 0 ? (
        <Empty title="No projects yet">Make one, then add outputs and uploads to it from the Outputs page.</Empty>
      ) : null}
      {rows.length > 0 ? (
        <Table columns={['Project', 'Files', 'Created by', 'Created']}>
          {rows.map((p) => (
            <tr key={p.id} data-project-id={p.id}>
              <td className="name-cell">
                <Link to={wsPath(ws, `projects/${encodeURIComponent(p.id)}`)} className="strong">
                  {p.name}
                </Link>
                {p.description ? <span className="muted small block">{p.description}</span> : null}
              </td>
              <td>{p.file_count}</td>
              <td>{p.created_by?.email ?? <span className="muted">—</span>}</td>
              <td className="nowrap">{formatDateTime(p.created_at)}</td>
            </tr>
          ))}
        </Table>
      ) : null}
      {creating ? (
        <CreateProjectDialog
          create={create}
          onClose={() => setCreating(false)}
          onMade={(p) => navigate(wsPath(ws, `projects/${encodeURIComponent(p.id)}`))}
        />
      ) : null}
    </>
  );
}

function CreateProjectDialog({
  create,
  onClose,
  onMade,
}: {
  create: (name: string, description: string) => Promise<Project>;
  onClose: () => void;
  onMade: (p: Project) => void;
}) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const action = useAction(create);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const made = await action.call(name.trim(), description.trim());
    if (made) onMade(made);
  };
  return (
    <Dialog title="New project" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <div className="field">
            <label htmlFor="project-name">Name</label>
            <input
              id="project-name"
              className="input"
              required
              maxLength={100}
              placeholder="Product photos"
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="project-description">Description</label>
            <input
              id="project-description"
              className="input"
              maxLength={1000}
              value={description}
              onChange={(e) => setDescription(e.target.value)}
            />
          </div>
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions onCancel={onClose} label="Create" pendingLabel="Creating…" pending={action.pending} />
      </form>
    </Dialog>
  );
}
