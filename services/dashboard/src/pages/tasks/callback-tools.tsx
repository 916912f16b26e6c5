// The Tasks page's tools for callback receivers (owners and admins): recover parked deliveries, send a test callback.
import { type FormEvent, useState } from 'react';
import type { CallbackRecovery, CallbackTest } from '../../api/types';
import { useAction } from '../../api/use-api';
import { Dialog, DialogActions } from '../../components/dialog';
import { ErrorNotice } from '../../components/notice';
import { Badge } from '../../components/page';
import { SelectField } from '../../components/select-field';
import { useCallbackTools } from './use-tasks';

const HOUR_MS = 3_600_000;
const SINCE: { value: number; label: string }[] = [
  { value: 1, label: 'The last hour' },
  { value: 24, label: 'The last 24 hours' },
  { value: 72, label: 'The last 3 days' },
  { value: 168, label: 'The last 7 days' },
  { value: 720, label: 'The last 30 days' },
];

export function CallbackTools({ onRecovered }: { onRecovered: () => void }) {
  const [open, setOpen] = useState<'recover' | 'test' | null>(null);
  return (
    <>
      <button type="button" className="button" onClick={() => setOpen('recover')}>
        Recover parked deliveries
      </button>
      <button type="button" className="button" onClick={() => setOpen('test')}>
        Send a test callback
      </button>
      {open === 'recover' ? <RecoverDialog onClose={() => setOpen(null)} onRecovered={onRecovered} /> : null}
      {open === 'test' ? <TestCallbackDialog onClose={() => setOpen(null)} /> : null}
    </>
  );
}

function RecoverDialog({ onClose, onRecovered }: { onClose: () => void; onRecovered: () => void }) {
  const tools = useCallbackTools();
  const [hours, setHours] = useState(24);
  const [done, setDone] = useState<CallbackRecovery | null>(null);
  const action = useAction(tools.recover);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await action.call(new Date(Date.now() - hours * HOUR_MS).toISOString());
    if (!r) return;
    setDone(r);
    onRecovered();
  };
  return (
    <Dialog title="Recover parked deliveries" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <p>
            Each callback parked after its last failed attempt in this period gets a new round of attempts, the first
            one now. Deliveries already being retried are left as they are.
          </p>
          <SelectField label="Parked since" value={hours} options={SINCE} onChange={setHours} />
          {done ? (
            <p className="notice" role="status">
              {done.recovered === 0
                ? 'No parked delivery in this period: nothing to recover.'
                : `A new round started for ${done.recovered} ${done.recovered === 1 ? 'delivery' : 'deliveries'}.`}
              {done.has_more ? ' More remain: recover again to continue.' : ''}
            </p>
          ) : null}
          <ErrorNotice error={action.error} />
        </div>
        <DialogActions onCancel={onClose} label="Recover" pendingLabel="Recovering…" pending={action.pending} />
      </form>
    </Dialog>
  );
}

function TestCallbackDialog({ onClose }: { onClose: () => void }) {
  const tools = useCallbackTools();
  const [url, setUrl] = useState('');
  const [result, setResult] = useState<CallbackTest | null>(null);
  const action = useAction(tools.test);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setResult((await action.call(url.trim())) ?? null);
  };
  return (
    <Dialog title="Send a test callback" onClose={onClose}>
      <form onSubmit={submit}>
        <div className="dialog-body">
          <p>
            A sample completed task, signed with this workspace's secret exactly as a real callback, is POSTed to the
            URL under the same rules (HTTPS, a public address, a valid certificate).
          </p>
          <div className="field">
            <label htmlFor="test-callback-url">Receiver URL</label>
            <input
              id="test-callback-url"
              className="input"
              type="url"
              required
              maxLength={2048}
              placeholder="https://example.com/hooks/gensvc"
              value={url}
              onChange={(e) => setUrl(e.target.value)}
            />
          </div>
          <ErrorNotice error={action.error} />
          {result ? <TestResult r={result} /> : null}
        </div>
        <DialogActions onCancel={onClose} label="Send" pendingLabel="Sending…" pending={action.pending} />
      </form>
    </Dialog>
  );
}

function TestResult({ r }: { r: CallbackTest }) {
  return (
    <section aria-label="Test callback result" role="status">
      <dl className="details">
        <dt>Result</dt>
        <dd>
          <Badge value={r.delivered ? 'delivered' : 'failed'} />{' '}
          {r.status_code === null ? 'no answer' : `HTTP ${r.status_code}`} in {r.latency_ms} ms
        </dd>
        {r.error ? (
          <>
            <dt>Error</dt>
            <dd className="small">{r.error}</dd>
          </>
        ) : null}
        <dt>Sample task</dt>
        <dd className="mono small">{r.task_id}</dd>
      </dl>
      {r.response_head ? (
        <>
          <p className="small muted">The receiver's first bytes:</p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling block must take keyboard focus (axe) */}
          <pre className="code code-short" tabIndex={0}>
            {r.response_head}
          </pre>
        </>
      ) : null}
    </section>
  );
}
