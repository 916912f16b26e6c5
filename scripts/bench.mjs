// `npm run bench`: set-up (install, build), then chat, evaluate and tasks in one run, and one table of the floors:
// each figure against its baseline from the same run. `npm run bench -- <name>` runs bench/<name>.mjs alone.
// Benchmarks print figures; they are not tests.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

const USAGE = [
  'usage: npm run bench [-- <name>]   (DURATION_MS, WARMUP_MS tune the timed cases)',
  '  (none)     chat, evaluate and tasks, then the floors table',
  "  edge       the edge's own cost per request (healthz, balance with and without the key cache)",
  '  chat       chat completions direct to the upstream-sim, through gensvc and through Portkey, JSON and SSE',
  '  evaluate   POST /evaluate direct to the upstream-sim, through gensvc (one and two edges) and a bare BullMQ hop',
  "  files      25 MiB uploads through the edge against PutObject to the same S3; the edge's memory meanwhile",
  '  tasks      generation tasks end to end (create → completed → callback) and callback deliveries,',
  '             against raw BullMQ',
  '  hot-path-profile  a CPU profile of the edge under chat load, summed by library and function',
  "  edge-ab 'A env' 'B env'  two edges with different environments (k=v,k=v), chat load in alternating passes",
  '',
].join('\n');

/**
 * The floors every change must keep, by the name a bench reports its figure under (reportFigures, bench/lib/table.mjs):
 * met when value ÷ baseline ≥ `min`, or when `met(value, baseline)` says so.
 */
const FLOORS = [
  { figure: 'chat JSON c32', label: 'chat JSON, concurrency 32, req/s', vs: 'Portkey', floor: '≥ 2×', min: 2 },
  { figure: 'chat SSE c32', label: 'chat SSE, concurrency 32, req/s', vs: 'Portkey', floor: '≥ 1.5×', min: 1.5 },
  {
    figure: 'chat JSON c1 added p50',
    label: 'chat JSON, concurrency 1, p50 added over direct (ms)',
    vs: "Portkey's",
    floor: "≤ Portkey's + 0.2 ms",
    met: (value, baseline) => value <= baseline + 0.2,
    diff: true,
  },
  {
    figure: 'evaluate c32',
    label: 'evaluate, concurrency 32, req/s',
    vs: 'bare BullMQ hop',
    floor: '≥ 0.35×',
    min: 0.35,
  },
  { figure: 'callback deliveries', label: 'callback deliveries/s', vs: 'raw BullMQ', floor: '≥ 0.2×', min: 0.2 },
  {
    figure: 'completion → callback p50',
    label: 'completion → callback received, p50 (ms)',
    floor: '≤ 50 ms',
    met: (value) => value <= 50,
  },
  {
    figure: 'tasks end to end',
    label: 'tasks end to end, per second',
    vs: 'raw BullMQ ÷ 5',
    floor: '≥ 0.06×',
    min: 0.06,
  },
];

const run = (name, env = process.env) => {
  const args = [join(root, 'bench', `${name}.mjs`), ...process.argv.slice(3)];
  return spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env }).status ?? 1;
};

function printFloors(figures) {
  const fixed = (v, digits) => (Number.isFinite(v) ? v.toFixed(digits) : '—');
  const rows = FLOORS.map((f) => {
    const got = figures[f.figure];
    if (!got) return [f.label, '—', '—', '—', f.floor, 'not measured'];
    const { value, baseline } = got;
    const digits = value < 100 ? 2 : 0;
    const added = value - baseline;
    const ratio = f.diff
      ? `${added >= 0 ? '+' : ''}${fixed(added, 2)} ms`
      : baseline
        ? `${fixed(value / baseline, 2)}×`
        : '—';
    const met = f.met ? f.met(value, baseline) : value / baseline >= f.min;
    const base = baseline === undefined ? '—' : `${fixed(baseline, digits)} (${f.vs})`;
    return [f.label, fixed(value, digits), base, ratio, f.floor, met ? 'met' : 'MISSED'];
  });
  const header = ['figure', 'gensvc', 'baseline', 'ratio', 'floor', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('   ');
  console.log(`\nfloors (one run, ratios against the same run's baselines)\n${line(header)}`);
  for (const r of rows) console.log(line(r));
  return rows.every((r) => r[5] === 'met');
}

const name = process.argv[2];
if (name && !existsSync(join(root, 'bench', `${name}.mjs`))) {
  process.stderr.write(USAGE);
  process.exit(2);
}
await bootstrap();
if (name) process.exit(run(name));

const dir = mkdtempSync(join(tmpdir(), 'gensvc-bench-figures-'));
const file = join(dir, 'figures.jsonl');
let failed = 0;
for (const bench of ['chat', 'evaluate', 'tasks']) {
  if (run(bench, { ...process.env, BENCH_FIGURES_FILE: file }) !== 0) failed++;
}
const figures = existsSync(file)
  ? Object.assign(
      {},
      ...readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    )
  : {};
rmSync(dir, { recursive: true, force: true });
const allMet = printFloors(figures);
process.exit(failed || !allMet ? 1 : 0);
