// Resident set size of another process, read from /proc (Linux): the figure a container's memory limit counts.
import { readFileSync } from 'node:fs';

/** The process's current RSS in MiB; 0 once it has gone. */
export function rssMiB(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Samples the process's RSS every `everyMs` until stop(), which answers the peak in MiB. */
export function rssSampler(pid, everyMs = 50) {
  let peak = 0;
  const read = () => (peak = Math.max(peak, rssMiB(pid)));
  read();
  const timer = setInterval(read, everyMs);
  return {
    peek: () => {
      read();
      return peak;
    },
    stop: () => {
      clearInterval(timer);
      read();
      return peak;
    },
  };
}
