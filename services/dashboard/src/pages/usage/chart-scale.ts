/**
 * The top of the y axis and the step between gridlines for values up to `max`: a step of 1, 2 or 5 × 10^n giving
 * about four gridlines, and a top that is a whole number of steps at or above `max`.
 */
export function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 0.25 };
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  // toPrecision: 0.2 × 3 is 0.6000000000000001 in binary floating point; an axis label must read 0.6.
  const step = round(([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag);
  return { top: round(Math.ceil(max / step - 1e-9) * step), step };
}

const round = (n: number) => Number(n.toPrecision(12));

/** The gridline values from 0 to top. */
export function ticks({ top, step }: { top: number; step: number }): number[] {
  const n = Math.round(top / step);
  return Array.from({ length: n + 1 }, (_, i) => round(i * step));
}
