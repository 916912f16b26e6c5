// CPU time per request, read from /proc (Linux): user + system time does not grow when a shared, throttled machine
// stretches wall-clock time, and with every process of a run on the same cores it says where those cores go:
// throughput ≈ cores ÷ (CPU ms per request summed over every process the request crosses).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { measure } from './load.mjs';
import { printTable } from './table.mjs';

/** Linux's USER_HZ (`getconf CLK_TCK`): 100 on every mainstream build. */
const TICKS_PER_SECOND = 100;
export const CORES = availableParallelism();

/**
 * CPU milliseconds (user + system) process `pid` has used so far; 0 once it has gone. With `mainThread`, its main
 * thread's alone (/proc/<pid>/task/<pid>: a Node process's event loop, without V8's helper threads).
 */
export function cpuMs(pid, { mainThread = false } = {}) {
  try {
    const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8')
      .split(') ')[1]
      .split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND; // utime, stime
  } catch {
    return 0;
  }
}

/** This process's CPU milliseconds so far (the load generator's, when it runs in the bench's own process). */
const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The CPU milliseconds of these processes together. */
export const pidsCpuMs =
  (...pids) =>
  () =>
    pids.reduce((sum, pid) => sum + cpuMs(pid), 0);

/** A Redis server's CPU milliseconds (INFO cpu): the run's own redis-server when the stack started it. */
const redisCpuMs = (redis) => async () => {
  const info = await redis.info('cpu');
  const f = (k) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)[1]);
  return (f('used_cpu_user') + f('used_cpu_sys')) * 1000;
};

/**
 * A Postgres server's CPU milliseconds: every process pg_stat_activity lists (client backends and background
 * workers; the postmaster itself is idle), as a counter that only grows: a backend first seen counts from its start,
 * one gone since the last read loses what it used since then (little, once the pools are warm).
 */
const postgresCpuMs = (db) => {
  const last = new Map();
  let total = 0;
  return async () => {
    for (const { pid } of await db.$queryRawUnsafe('SELECT pid FROM pg_stat_activity')) {
      const now = cpuMs(pid);
      total += Math.max(0, now - (last.get(pid) ?? 0));
      last.set(pid, now);
    }
    return total;
  };
};

/**
 * The processes every case of a bench/chat or bench/evaluate run crosses besides its gateway: the sim, this load
 * generator, Redis and Postgres. Fresh for each case (postgresCpuMs keeps state).
 */
export const harnessCpuSources = ({ simPid, redis, db }) => ({
  sim: pidsCpuMs(simPid),
  'load gen': selfCpuMs,
  redis: redisCpuMs(redis),
  postgres: postgresCpuMs(db),
});

/**
 * measure(target, options), metering `sources` ({ name: () => ms or Promise<ms> }) meanwhile: answers measure's
 * result with `cpu`, per name the CPU ms used divided by the requests made (warm-up included, errors included).
 */
export async function measureCpu(target, options, sources) {
  const read = async () =>
    Object.fromEntries(await Promise.all(Object.entries(sources).map(async ([k, f]) => [k, await f()])));
  const before = await read();
  const result = await measure(target, options);
  const after = await read();
  const n = result.answered + result.errors;
  return { ...result, cpu: Object.fromEntries(Object.keys(sources).map((k) => [k, (after[k] - before[k]) / n])) };
}

/**
 * Prints CPU ms per request for `entries` ([{ label, cpu: { name: ms }, rps }]), one column per process (in the
 * order first seen; '-' where a case did not cross it), their total, what the cores allow at that total
 * (CORES × 1000 ÷ total) and the measured req/s.
 */
export function printCpuTable(entries) {
  const names = [...new Set(entries.flatMap((e) => Object.keys(e.cpu)))];
  const rows = entries.map(({ label, cpu, rps }) => {
    const total = totalCpu(cpu);
    return [
      label,
      ...names.map((n) => (n in cpu ? cpu[n].toFixed(3) : '-')),
      total.toFixed(3),
      ((CORES * 1000) / total).toFixed(0),
      rps.toFixed(0),
    ];
  });
  printTable(['case', ...names, 'total', `${CORES} cores ÷ total, req/s`, 'measured req/s'], rows);
}

/** Sum of a case's CPU ms per request over every process. */
export const totalCpu = (cpu) => Object.values(cpu).reduce((a, b) => a + b, 0);

/** Read and write system calls process `pid` has made so far (/proc/<pid>/io: a socket write or read is one each). */
export function syscalls(pid) {
  const io = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(': ')),
  );
  return { r: Number(io.syscr), w: Number(io.syscw) };
}
