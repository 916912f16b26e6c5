import { parseAmount, toAmount } from './money';

describe('money', () => {
  it.each([
    ['10', 10_000_000n],
    ['10.00', 10_000_000n],
    ['0.5', 500_000n],
    ['0.000001', 1n],
    [' 3.25 ', 3_250_000n],
  ])('parses %j', (text, micros) => expect(parseAmount(text)).toBe(micros));
  it.each(['', '-1', '1.0000001', 'ten', '1e3', '1,5'])('refuses %j', (text) => expect(parseAmount(text)).toBeNull());
  it('answers in currency units', () => {
    expect(toAmount(10_000_000n)).toBe(10);
    expect(toAmount(1n)).toBe(0.000001);
    expect(toAmount(123_456_789n)).toBe(123.456789);
  });
});
