import { formatBytes, formatDuration, formatMoney } from '../src/components/format';

it('keeps small charges readable and amounts in the workspace currency', () => {
  expect(formatMoney(12.5, 'USD')).toBe('$12.50');
  expect(formatMoney(0.0035, 'USD')).toBe('$0.0035');
  expect(formatMoney(0, 'USD')).toBe('$0.00');
  expect(formatMoney(3, 'EUR')).toBe('€3.00');
});

it('writes sizes and durations for people', () => {
  expect(formatBytes(512)).toBe('512 B');
  expect(formatBytes(2_252)).toBe('2.2 KB');
  expect(formatBytes(31_457_280)).toBe('30 MB');
  expect(formatDuration(4)).toBe('4 s');
  expect(formatDuration(125)).toBe('2 min 5 s');
  expect(formatDuration(null)).toBe('—');
});
