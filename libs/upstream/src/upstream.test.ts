import { CircuitBreaker } from './breaker';
import type { CatalogRoute } from './catalog';
import { failureFromStatus, orderRoutes, UpstreamFailure, withFailover } from './failover';
import { costOf, reservationFor } from './pricing';

const route = (id: string, priority = 0, weight = 1, enabled = true) =>
  ({
    modelId: 'sim/m',
    channelId: id,
    upstreamModel: null,
    channel: { id, name: id, priority, weight, enabled },
  }) as unknown as CatalogRoute;

describe('orderRoutes', () => {
  it('puts higher priority first and skips disabled channels', () => {
    const order = orderRoutes([route('low', 0), route('off', 9, 1, false), route('high', 5)]).map((r) => r.channel.id);
    expect(order).toEqual(['high', 'low']);
  });

  it('orders one priority by weight', () => {
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const first = { a: 0, b: 0 };
    for (let i = 0; i < 4000; i++)
      first[orderRoutes([route('a', 0, 3), route('b', 0, 1)], random)[0]!.channel.id as 'a' | 'b']++;
    expect(first.a / first.b).toBeGreaterThan(2.5);
    expect(first.a / first.b).toBeLessThan(3.5);
  });
});

describe('withFailover', () => {
  const failing = (status: number) =>
    new UpstreamFailure(`status ${status}`, 'status', status >= 500 || status === 429, status);

  it('moves to the next channel on 5xx and connection errors, and stops on a 4xx', async () => {
    const breaker = new CircuitBreaker();
    const calls: string[] = [];
    const result = await withFailover({
      routes: [route('a', 3), route('b', 2), route('c', 1)],
      breaker,
      call: async (r) => {
        calls.push(r.channel.id);
        if (r.channel.id === 'a') throw failing(503);
        if (r.channel.id === 'b') throw new UpstreamFailure('reset', 'connection', true);
        return 'ok';
      },
    });
    expect(result).toBe('ok');
    expect(calls).toEqual(['a', 'b', 'c']);

    calls.length = 0;
    await expect(
      withFailover({
        routes: [route('a', 3), route('c', 1)],
        breaker,
        call: async (r) => {
          calls.push(r.channel.id);
          throw failing(400);
        },
      }),
    ).rejects.toMatchObject({ status: 400, code: 'upstream_rejected' });
    expect(calls).toEqual(['a']);
    expect(breaker.isOpen('a')).toBe(false);
  });

  it('counts an invalid answer against the channel without asking another', async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2 });
    const calls: string[] = [];
    const call = async (r: CatalogRoute) => {
      calls.push(r.channel.id);
      throw new UpstreamFailure('probabilities do not sum to 1', 'invalid_response', false);
    };
    for (let i = 0; i < 2; i++) {
      await expect(withFailover({ routes: [route('a', 1), route('b', 0)], breaker, call })).rejects.toMatchObject({
        status: 502,
        code: 'upstream_invalid_response',
      });
    }
    expect(calls).toEqual(['a', 'a']);
    expect(breaker.isOpen('a')).toBe(true);
  });

  it('claims a half-open trial only for a channel it really calls, and gives it back on an abort', async () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 100, now: () => now });
    breaker.failure('b');
    now = 200; // b may have its trial now, but a answers first
    expect(
      await withFailover({ routes: [route('a', 1), route('b', 0)], breaker, call: async (r) => r.channel.id }),
    ).toBe('a');
    const failA = async (r: CatalogRoute) => {
      if (r.channel.id === 'a') throw new UpstreamFailure('down', 'status', true, 503);
      return r.channel.id;
    };
    // The trial closes b.
    expect(await withFailover({ routes: [route('a', 1), route('b', 0)], breaker, call: failA })).toBe('b');
    expect(breaker.isOpen('b')).toBe(false);

    breaker.failure('c');
    now = 400;
    class Aborted extends Error {}
    await expect(
      withFailover({
        routes: [route('c')],
        breaker,
        call: async () => {
          throw new Aborted();
        },
        isAbort: (e) => e instanceof Aborted,
      }),
    ).rejects.toMatchObject({ status: 502, code: 'upstream_error', cause: expect.any(Aborted) });
    expect(breaker.tryAcquire('c')).toBe(true); // the trial was given back, not left claimed
  });

  it('opens a failing channel for a while, then lets one trial through', async () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: 1000, now: () => now });
    const calls: string[] = [];
    const call = async (r: CatalogRoute) => {
      calls.push(r.channel.id);
      if (r.channel.id === 'a' && now < 5000) throw failing(500);
      return r.channel.id;
    };
    const routes = [route('a', 1), route('b', 0)];
    for (let i = 0; i < 3; i++) expect(await withFailover({ routes, breaker, call })).toBe('b');
    calls.length = 0;
    expect(await withFailover({ routes, breaker, call })).toBe('b');
    expect(calls).toEqual(['b']); // a is open: skipped
    now = 1500;
    calls.length = 0;
    expect(await withFailover({ routes, breaker, call })).toBe('b');
    expect(calls).toEqual(['a', 'b']); // the trial failed: open again
    now = 1600;
    calls.length = 0;
    await withFailover({ routes, breaker, call });
    expect(calls).toEqual(['b']);
    now = 5000;
    calls.length = 0;
    expect(await withFailover({ routes, breaker, call })).toBe('a'); // recovered by itself
    expect(breaker.isOpen('a')).toBe(false);
  });

  it('still tries when every channel is open, and reports the last failure', async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1 });
    breaker.failure('a');
    await expect(
      withFailover({
        routes: [route('a')],
        breaker,
        call: async () => {
          throw new UpstreamFailure('slow', 'timeout', true);
        },
      }),
    ).rejects.toMatchObject({ status: 504, code: 'upstream_timeout' });
    await expect(withFailover({ routes: [], breaker, call: async () => 1 })).rejects.toMatchObject({ status: 503 });
  });
});

describe('failureFromStatus', () => {
  it('fails over on 429, 5xx, the channel-side 4xx and non-error statuses', () => {
    for (const status of [302, 401, 402, 403, 404, 408, 425, 429, 500, 503]) {
      expect(failureFromStatus(status, '')).toMatchObject({
        kind: 'status',
        failover: true,
        status,
        answer: undefined,
      });
    }
  });

  it("answers the caller's other 4xx with the provider's message, keeping 413 and 422", () => {
    expect(
      failureFromStatus(400, JSON.stringify({ error: { message: 'messages[0]\n is  too long' } })).answer,
    ).toMatchObject({
      status: 400,
      code: 'upstream_rejected_request',
      message: 'The model provider rejected the request: messages[0] is too long',
    });
    expect(failureFromStatus(422, JSON.stringify({ error: 'bad state' })).answer).toMatchObject({
      status: 422,
      code: 'upstream_unprocessable_request',
      message: expect.stringContaining('bad state'),
    });
    expect(failureFromStatus(413, JSON.stringify({ message: 'too big' })).answer).toMatchObject({
      status: 413,
      code: 'upstream_request_too_large',
      message: expect.stringContaining('too big'),
    });
    expect(failureFromStatus(409, 'not json')).toMatchObject({
      failover: false,
      answer: { status: 400, message: 'The model provider rejected the request.' },
    });
  });
});

describe('pricing', () => {
  const model = {
    inputPricePerMTok: 2_000_000n,
    outputPricePerMTok: 8_000_000n,
    inputOnly: false,
    maxOutputTokens: 1000,
  };
  it('charges per million tokens, rounded up to the micro-unit', () => {
    expect(costOf(model, { inputTokens: 1_000_000, outputTokens: 0 })).toBe(2_000_000n);
    expect(costOf(model, { inputTokens: 1, outputTokens: 1 })).toBe(10n);
    expect(
      costOf({ ...model, inputPricePerMTok: 1n, outputPricePerMTok: 0n }, { inputTokens: 1, outputTokens: 0 }),
    ).toBe(1n);
    expect(costOf({ ...model, inputOnly: true }, { inputTokens: 10, outputTokens: 1_000_000 })).toBe(20n);
  });
  it('reserves an upper bound from the request size and the output cap', () => {
    expect(reservationFor(model, { inputBytes: 500 })).toBe(costOf(model, { inputTokens: 500, outputTokens: 1000 }));
    expect(reservationFor(model, { inputBytes: 500, maxOutputTokens: 10 })).toBe(
      costOf(model, { inputTokens: 500, outputTokens: 10 }),
    );
    expect(reservationFor(model, { inputBytes: 500, maxOutputTokens: 1e9 })).toBe(
      costOf(model, { inputTokens: 500, outputTokens: 1000 }),
    );
  });
});
