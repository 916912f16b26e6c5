import { niceScale, ticks } from '../src/pages/usage/chart-scale';

it('picks a 1-2-5 step giving about four gridlines, with a top at or above the largest value', () => {
  expect(niceScale(0.55)).toEqual({ top: 0.6, step: 0.2 });
  expect(niceScale(3.2)).toEqual({ top: 4, step: 1 });
  expect(niceScale(17)).toEqual({ top: 20, step: 5 });
  expect(niceScale(400)).toEqual({ top: 400, step: 100 });
  for (const max of [0.0003, 0.07, 1, 9.99, 123.4, 88_888]) {
    const { top, step } = niceScale(max);
    expect(top).toBeGreaterThanOrEqual(max);
    expect(top / step).toBeGreaterThanOrEqual(2);
    expect(top / step).toBeLessThanOrEqual(6);
    expect([1, 2, 5]).toContain(Number((step / 10 ** Math.floor(Math.log10(step))).toPrecision(6)));
  }
});

it('puts gridlines on exact multiples of the step', () => {
  expect(ticks(niceScale(0.55))).toEqual([0, 0.2, 0.4, 0.6]);
  expect(ticks(niceScale(0.0003))).toEqual([0, 0.0001, 0.0002, 0.0003]);
});

it('draws an empty chart on a unit axis', () => {
  expect(niceScale(0)).toEqual({ top: 1, step: 0.25 });
  expect(niceScale(Number.NaN)).toEqual({ top: 1, step: 0.25 });
});
