import { useState, type FormEvent } from 'react';
import type { Output, ProjectFileChange } from '../../api/types';
import { useAction } from '../../api/use-api';
import { Dialog, DialogActions } from '../../components/dialog';
import { ErrorNotice, Loading } from '../../components/notice';
import { SelectField } from '../../components/select-field';
import { Link, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { useProjects } from './use-projects';

/** Attaches an output or an upload to one of the workspace's projects; attaching it again changes nothing. */
export function AddToProjectDialog({
  o,
  onClose,
  onAdded,
}: {
  o: Output;
  onClose: () => void;
  onAdded: (changed: ProjectFileChange, projectName: string) => void;
}) {
  const { id: ws, api } = useWorkspace();
  const { list } = useProjects();
  const projects = (list.data ?? []).filter((p) => !o.projects.includes(p.id));
  const [chosen, setChosen] = useState('');
  const projectId = chosen || projects[0]?.id || '';
  const action = useAction((pid: string) => api.projects.attach(pid, o.id));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const changed = await action.call(projectId);
    if (changed) onAdded(changed, projects.find((p) => p.id === projectId)?.name ?? '');
  };
  return (
    <Dialog title="Add to project" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <p>
            <strong>{o.filename}</strong> is kept for as long as a project holds it.
          </p>
          {list.loading && !list.data ? <Loading /> : null}
          <ErrorNotice error={list.error} />
          {list.data && projects.length === 0 ? (
            <p className="muted">
              No project to add it to: <Link to={wsPath(ws, 'projects')}>make one on the Projects page</Link>.
            </p>
          ) : null}
          {projects.length > 0 ? (
            <SelectField
              label="Project"
              value={projectId}
              options={projects.map((p) => ({ value: p.id, label: p.name }))}
              onChange={setChosen}
            />
          ) : null}
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions
          onCancel={onClose}
          label="Add"
          pendingLabel="Adding…"
          pending={action.pending}
          disabled={!projectId}
        />
      </form>
    </Dialog>
  );
}
