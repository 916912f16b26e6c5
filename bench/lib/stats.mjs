// Percentiles over latency samples (milliseconds). Nearest-rank on the sorted samples, as every table here reports.

/** Sorts `samples` in place and returns a picker for quantiles in [0, 1]. */
function quantiles(samples) {
  samples.sort((a, b) => a - b);
  return (q) => (samples.length ? samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] : NaN);
}

/** p50/p99 of `samples` (sorted in place). */
export function percentiles(samples) {
  const pick = quantiles(samples);
  return { p50: pick(0.5), p99: pick(0.99) };
}
