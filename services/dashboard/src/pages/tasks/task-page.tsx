import { useState } from 'react';
import { useAction } from '../../api/use-api';
import { formatDateTime } from '../../components/format';
import { ErrorNotice, Loading } from '../../components/notice';
import { Badge, PageHeader } from '../../components/page';
import { Table } from '../../components/table';
import { Link, wsPath } from '../../router';
import { useWorkspace } from '../../workspace';
import { useTask } from './use-tasks';

export function TaskPage({ taskId }: { taskId: string }) {
  const { id: ws, can } = useWorkspace();
  const { task, redeliver } = useTask(taskId);
  const action = useAction(redeliver);
  const [queued, setQueued] = useState(false);
  const t = task.data?.task;
  const attempts = task.data?.attempts ?? [];
  return (
    <>
      <p className="crumbs">
        <Link to={wsPath(ws, 'tasks')}>Tasks</Link> / <span className="mono">{taskId}</span>
      </p>
      <PageHeader
        title="Task"
        description={t ? `${t.model} · ${t.operation}` : undefined}
        actions={
          t && can.redeliver && t.callback_url ? (
            <button
              type="button"
              className="button"
              disabled={action.pending}
              onClick={async () => setQueued(Boolean(await action.call()))}
            >
              {action.pending ? 'Redelivering…' : 'Redeliver'}
            </button>
          ) : null
        }
      />
      <ErrorNotice error={task.error ?? action.error} />
      {task.loading && !t ? <Loading /> : null}
      {queued ? (
        <p className="notice" role="status">
          A new delivery of the callback is queued.
        </p>
      ) : null}
      {t ? (
        <>
          <section className="card">
            <dl className="details details-grid">
              <dt>Status</dt>
              <dd>
                <Badge value={t.status} />
              </dd>
              <dt>Created</dt>
              <dd>{formatDateTime(t.created_at)}</dd>
              {t.error ? (
                <>
                  <dt>Failure</dt>
                  <dd>
                    <span className="mono small">{errorOf(t.error).code}</span> {errorOf(t.error).message}
                  </dd>
                </>
              ) : null}
              <dt>Callback URL</dt>
              <dd className="mono small">{t.callback_url ?? '—'}</dd>
              <dt>Callback</dt>
              <dd>{t.callback_state && t.callback_state !== 'none' ? <Badge value={t.callback_state} /> : '—'}</dd>
            </dl>
          </section>
          <section aria-labelledby="attempts-title">
            <h2 id="attempts-title" className="section-title">
              Callback attempts
            </h2>
            {attempts.length === 0 ? (
              <p className="muted">No callback attempt yet.</p>
            ) : (
              <Table columns={['#', 'Time', 'Status', 'Duration', 'Error', 'Delivery id']}>
                {attempts.map((a) => (
                  <tr key={a.delivery_id}>
                    <td>{a.attempt}</td>
                    <td>{formatDateTime(a.created_at)}</td>
                    <td>{a.status_code ?? '—'}</td>
                    <td>{a.duration_ms === null ? '—' : `${a.duration_ms} ms`}</td>
                    <td className="small">{a.error ?? ''}</td>
                    <td className="mono small">{a.delivery_id}</td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
          <section aria-labelledby="envelope-title">
            <h2 id="envelope-title" className="section-title">
              Envelope
            </h2>
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling block must take keyboard focus (axe) */}
            <pre className="code" tabIndex={0}>
              {JSON.stringify(t, null, 2)}
            </pre>
          </section>
        </>
      ) : null}
    </>
  );
}

const errorOf = (e: unknown): { code: string; message: string } => {
  const o = (e && typeof e === 'object' ? e : {}) as { code?: unknown; message?: unknown };
  return { code: String(o.code ?? ''), message: String(o.message ?? '') };
};
