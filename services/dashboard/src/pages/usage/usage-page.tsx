import { useState } from 'react';
import type { UsageSplit } from '../../api/types';
import { formatMoney } from '../../components/format';
import { Empty, ErrorNotice, Loading } from '../../components/notice';
import { PageHeader } from '../../components/page';
import { Table } from '../../components/table';
import { SpendChart } from './spend-chart';
import { useUsage } from './use-usage';

export function UsagePage() {
  const [split, setSplit] = useState<UsageSplit>('model');
  const usage = useUsage(split, 30);
  const u = usage.data;
  return (
    <>
      <PageHeader title="Usage" description="What this workspace spent, from its ledger." />
      <ErrorNotice error={usage.error} />
      {!u && usage.loading ? <Loading /> : null}
      {u ? (
        <>
          <div className="stats">
            <div className="stat card">
              <span className="muted small">Balance</span>
              <span className="stat-value" data-testid="balance">
                {formatMoney(u.balance, u.currency)}
              </span>
            </div>
            <div className="stat card">
              <span className="muted small">Spent in the last {u.days.length} days</span>
              <span className="stat-value">{formatMoney(u.total, u.currency)}</span>
            </div>
          </div>
          <section className="card" aria-labelledby="spend-title">
            <div className="card-head">
              <h2 id="spend-title">Spend per day</h2>
              <div className="segmented" role="radiogroup" aria-label="Split the chart by">
                {(['model', 'key'] as const).map((s) => (
                  <label key={s} className={split === s ? 'segment active' : 'segment'}>
                    <input type="radio" name="split" value={s} checked={split === s} onChange={() => setSplit(s)} />
                    By {s}
                  </label>
                ))}
              </div>
            </div>
            {u.series.length === 0 ? <Empty title="No spend in this period" /> : <SpendChart usage={u} />}
            {usage.loading ? <Loading label="Updating…" /> : null}
          </section>
          <section aria-labelledby="key-spend-title">
            <h2 id="key-spend-title" className="section-title">
              Spend by key
            </h2>
            {u.keys.length === 0 ? (
              <p className="muted">No keys.</p>
            ) : (
              <Table columns={['Key', 'Prefix', 'Spent', 'Spend cap', 'Share of cap']}>
                {u.keys.map((k) => (
                  <tr key={k.id}>
                    <td className="strong">{k.name}</td>
                    <td className="mono">{k.prefix}…</td>
                    <td>{formatMoney(k.spent, u.currency)}</td>
                    <td>
                      {k.spend_cap === null ? (
                        <span className="muted">No cap</span>
                      ) : (
                        formatMoney(k.spend_cap, u.currency)
                      )}
                    </td>
                    <td className="meter-cell">
                      {k.spend_cap ? (
                        <meter
                          min={0}
                          max={k.spend_cap}
                          value={Math.min(k.spent, k.spend_cap)}
                          aria-label={`${k.name}: share of its cap spent`}
                        />
                      ) : null}
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
        </>
      ) : null}
    </>
  );
}
