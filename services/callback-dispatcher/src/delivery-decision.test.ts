// The delivery decision as a table: every row is (state, round start, attempt, status, when it ended) → what follows.
import { decideDelivery, type DeliveryStep } from './delivery-decision';

const SCHEDULE = [0, 30_000, 120_000, 600_000, 3_600_000];
const T0 = Date.UTC(2026, 10, 25, 12, 0, 0);

type Row = [
  what: string,
  state: 'pending' | 'delivered' | 'parked' | 'none',
  roundStart: number,
  attempt: number,
  status: number | null,
  endedAfterMs: number,
  nowAfterMs: number,
  expected: DeliveryStep,
];

const rows: Row[] = [
  ['a 200 delivers', 'pending', 1, 1, 200, 50, 60, { step: 'delivered' }],
  ['a 204 delivers', 'pending', 1, 3, 204, 50, 60, { step: 'delivered' }],
  ['a 299 delivers', 'pending', 1, 1, 299, 50, 60, { step: 'delivered' }],
  [
    'a 300 is a failure: the 2nd attempt is due 30 s after the 1st ended',
    'pending',
    1,
    1,
    300,
    50,
    60,
    { step: 'retry', attempt: 2, delayMs: 30_000 - 10 },
  ],
  [
    'a 500 on attempt 2: the 3rd is due 2 min after',
    'pending',
    1,
    2,
    500,
    1_000,
    1_000,
    { step: 'retry', attempt: 3, delayMs: 120_000 },
  ],
  [
    'no answer (timeout) on attempt 3: the 4th in 10 min',
    'pending',
    1,
    3,
    null,
    10_000,
    10_000,
    { step: 'retry', attempt: 4, delayMs: 600_000 },
  ],
  ['a 404 on attempt 4: the 5th in 1 h', 'pending', 1, 4, 404, 0, 0, { step: 'retry', attempt: 5, delayMs: 3_600_000 }],
  ['the 5th failure of a round parks', 'pending', 1, 5, 500, 0, 0, { step: 'parked' }],
  [
    'a redelivered round counts from its start: attempt 7 of a round from 6 is its 2nd',
    'pending',
    6,
    7,
    503,
    0,
    0,
    { step: 'retry', attempt: 8, delayMs: 120_000 },
  ],
  ['… and its 5th (attempt 10) parks', 'pending', 6, 10, 503, 0, 0, { step: 'parked' }],
  [
    're-decided late (a reconciler, 40 s after): the wait is not pushed later, never negative',
    'pending',
    1,
    1,
    500,
    0,
    40_000,
    { step: 'retry', attempt: 2, delayMs: 0 },
  ],
  [
    're-decided 10 s after: 20 s are left',
    'pending',
    1,
    1,
    500,
    0,
    10_000,
    { step: 'retry', attempt: 2, delayMs: 20_000 },
  ],
  ['an attempt of a round a redelivery replaced', 'pending', 6, 5, 500, 0, 0, { step: 'none', reason: 'superseded' }],
  ['… even a 2xx of it changes nothing', 'pending', 6, 5, 200, 0, 0, { step: 'none', reason: 'superseded' }],
  ['already delivered', 'delivered', 1, 2, 500, 0, 0, { step: 'none', reason: 'not_pending' }],
  ['already parked', 'parked', 1, 5, 200, 0, 0, { step: 'none', reason: 'not_pending' }],
  ['no callback', 'none', 1, 1, 200, 0, 0, { step: 'none', reason: 'not_pending' }],
];

describe('decideDelivery', () => {
  it.each(rows)('%s', (_what, state, roundStart, attempt, status, endedAfterMs, nowAfterMs, expected) => {
    const recorded = { attempt, statusCode: status, createdAt: new Date(T0), durationMs: endedAfterMs };
    expect(
      decideDelivery({ callbackState: state, callbackRoundStart: roundStart }, recorded, SCHEDULE, {
        now: T0 + nowAfterMs,
      }),
    ).toEqual(expected);
  });

  it('counts the next wait from endedAt when the caller knows it (the status line came after durationMs)', () => {
    const recorded = { attempt: 1, statusCode: 500, createdAt: new Date(T0), durationMs: 100 };
    expect(
      decideDelivery({ callbackState: 'pending', callbackRoundStart: 1 }, recorded, SCHEDULE, {
        now: T0 + 500,
        endedAt: T0 + 500,
      }),
    ).toEqual({ step: 'retry', attempt: 2, delayMs: 30_000 });
  });

  it('follows the schedule it is given: a round is as long as the schedule', () => {
    const recorded = { attempt: 2, statusCode: 500, createdAt: new Date(T0), durationMs: 0 };
    expect(
      decideDelivery({ callbackState: 'pending', callbackRoundStart: 1 }, recorded, [0, 1_000], { now: T0 }),
    ).toEqual({ step: 'parked' });
    expect(
      decideDelivery({ callbackState: 'pending', callbackRoundStart: 1 }, recorded, [0, 1_000, 2_000], { now: T0 }),
    ).toEqual({ step: 'retry', attempt: 3, delayMs: 2_000 });
  });
});
