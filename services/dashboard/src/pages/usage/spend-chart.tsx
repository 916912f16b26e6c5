import { useId } from 'react';
import { formatMoney } from '../../components/format';
import type { Usage } from '../../api/types';
import { niceScale, ticks } from './chart-scale';

const PALETTE = [
  '#10a37f',
  '#6366f1',
  '#f59e0b',
  '#ef4444',
  '#0ea5e9',
  '#a855f7',
  '#14b8a6',
  '#f97316',
  '#64748b',
  '#84cc16',
];
const colorOf = (i: number) => PALETTE[i % PALETTE.length] as string;

const W = 960;
const H = 280;
const PAD = { top: 16, right: 12, bottom: 28, left: 64 };

/** Spend per day, stacked by series (model or key): drawn here in SVG, no chart library. */
export function SpendChart({ usage }: { usage: Usage }) {
  const titleId = useId();
  const { days, series, currency } = usage;
  const totals = days.map((_, d) => series.reduce((sum, s) => sum + (s.amounts[d] ?? 0), 0));
  const scale = niceScale(Math.max(0, ...totals));
  const { top } = scale;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, slot * 0.68);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const labelEvery = days.length > 20 ? 5 : days.length > 10 ? 2 : 1;
  const busiest = totals.indexOf(Math.max(...totals));
  const highest = totals[busiest]
    ? `; the highest day ${days[busiest]} with ${formatMoney(totals[busiest] ?? 0, currency)}`
    : '';

  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={titleId} className="chart-svg">
        <title id={titleId}>
          {`Spend per day over the last ${days.length} days, ${formatMoney(usage.total, currency)} in all${highest}.`}
        </title>
        {ticks(scale).map((v) => (
          <g key={v}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} className="chart-grid" />
            <text x={PAD.left - 8} y={y(v)} className="chart-label" textAnchor="end" dominantBaseline="middle">
              {formatMoney(v, currency)}
            </text>
          </g>
        ))}
        {days.map((day, d) => {
          let base = 0;
          const x = PAD.left + d * slot + (slot - barW) / 2;
          return (
            <g key={day} data-day={day}>
              {series.map((s, i) => {
                const v = s.amounts[d] ?? 0;
                if (v <= 0) return null;
                const y0 = y(base);
                base += v;
                const h = Math.max(1, y0 - y(base));
                return (
                  <rect
                    key={s.id}
                    x={x}
                    y={y0 - h}
                    width={barW}
                    height={h}
                    rx={1.5}
                    fill={colorOf(i)}
                    className="chart-bar"
                    data-series={s.id}
                  >
                    <title>{`${day} · ${s.label}: ${formatMoney(v, currency)}`}</title>
                  </rect>
                );
              })}
              {d % labelEvery === 0 || d === days.length - 1 ? (
                <text x={x + barW / 2} y={H - 8} className="chart-label" textAnchor="middle">
                  {day.slice(5)}
                </text>
              ) : null}
            </g>
          );
        })}
        <line x1={PAD.left} x2={W - PAD.right} y1={y(0)} y2={y(0)} className="chart-axis" />
      </svg>
      <figcaption>
        <ul className="legend" aria-label="Series">
          {series.map((s, i) => (
            <li key={s.id}>
              <svg width="10" height="10" aria-hidden="true">
                <rect width="10" height="10" rx="2" fill={colorOf(i)} />
              </svg>
              <span>{s.label}</span>
              <span className="muted">
                {formatMoney(
                  s.amounts.reduce((a, b) => a + b, 0),
                  currency,
                )}
              </span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}
