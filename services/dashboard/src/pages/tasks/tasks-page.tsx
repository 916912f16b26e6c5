import { useState } from 'react';
import type { TaskStatus } from '../../api/types';
import { formatDateTime } from '../../components/format';
import { Empty, ErrorNotice, Loading } from '../../components/notice';
import { Badge, PageHeader } from '../../components/page';
import { SelectField } from '../../components/select-field';
import { Table } from '../../components/table';
import { Link, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { CallbackSecretPanel } from './callback-secret-panel';
import { CallbackTools } from './callback-tools';
import { useTasks } from './use-tasks';

const STATUSES: { value: TaskStatus | ''; label: string }[] = [
  { value: '', label: 'All statuses' },
  { value: 'queued', label: 'Queued' },
  { value: 'running', label: 'Running' },
  { value: 'completed', label: 'Completed' },
  { value: 'failed', label: 'Failed' },
  { value: 'canceled', label: 'Canceled' },
];

export function TasksPage() {
  const { id: ws, can } = useWorkspace();
  const [status, setStatus] = useState<TaskStatus | ''>('');
  const [version, setVersion] = useState(0);
  const tasks = useTasks(status, version);
  return (
    <>
      <PageHeader
        title="Tasks"
        description="Generation tasks and the delivery of their callbacks."
        actions={can.redeliver ? <CallbackTools onRecovered={() => setVersion((v) => v + 1)} /> : null}
      />
      {can.callback_secret ? <CallbackSecretPanel /> : null}
      <div className="filters">
        <SelectField label="Status" value={status} options={STATUSES} onChange={setStatus} />
      </div>
      <ErrorNotice error={tasks.error} />
      {!tasks.loading && tasks.items.length === 0 && !tasks.error ? (
        <Empty title="No tasks">Tasks you create through the API are listed here.</Empty>
      ) : null}
      {tasks.items.length > 0 ? (
        <Table columns={['Task', 'Status', 'Model', 'Operation', 'Failure', 'Created', 'Callback']}>
          {tasks.items.map((t) => (
            <tr key={t.task_id}>
              <td>
                <Link className="mono" to={wsPath(ws, `tasks/${encodeURIComponent(t.task_id)}`)}>
                  {t.task_id}
                </Link>
              </td>
              <td>
                <Badge value={t.status} />
              </td>
              <td>{t.model}</td>
              <td>{t.operation}</td>
              <td className="mono small">{t.error_code ?? ''}</td>
              <td className="nowrap">{formatDateTime(t.created_at)}</td>
              <td>
                {t.callback_state && t.callback_state !== 'none' ? (
                  <Badge value={t.callback_state} />
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
      {tasks.loading ? <Loading /> : null}
      {tasks.hasMore && !tasks.loading ? (
        <div className="center">
          <button type="button" className="button" onClick={tasks.loadMore}>
            Load more
          </button>
        </div>
      ) : null}
    </>
  );
}
