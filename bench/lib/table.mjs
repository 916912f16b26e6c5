// Fixed-width tables for benchmark output: columns right-aligned except the first.
import { appendFileSync } from 'node:fs';

/** Prints `rows` (arrays of cells, already formatted) under `header`. */
export function printTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('   ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}

export const ms = (v) => (Number.isFinite(v) ? v.toFixed(2) : '-');
export const int = (v) => (Number.isFinite(v) ? v.toFixed(0) : '-');
export const ratio = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : '-');
/** A target check: "ok" or "MISSED". */
export const verdict = (ok) => (ok ? 'ok' : 'MISSED');

/** Prints the errors a run had (a route misbehaving under load is reported, never hidden). */
export function printErrors(name, r) {
  if (!r.errors) return;
  console.log(`  ! ${name}: ${r.errors} failed requests`);
  for (const [reason, count] of r.errorReasons) console.log(`    ${count} × ${reason}`);
}

/**
 * Hands `figures` ({ name: { value, baseline } }) to `npm run bench`'s summary: one JSON line appended to
 * BENCH_FIGURES_FILE when it is set (scripts/bench.mjs sets it when it runs every bench at once).
 */
export function reportFigures(figures) {
  if (process.env.BENCH_FIGURES_FILE) appendFileSync(process.env.BENCH_FIGURES_FILE, `${JSON.stringify(figures)}\n`);
}
