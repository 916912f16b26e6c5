// Fault injection over real sockets: each effect is observed the way a gateway would observe it.
import { request as httpRequest } from 'node:http';
import { jsonOf } from '@gensvc/testing';
import { expectedAnswers, startSim, type EvaluateRequest, type Sim } from './index';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim();
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const evaluateBody: EvaluateRequest = {
  model: 'acme/judge-1',
  state: 'the state',
  questions: {
    a: { type: 'boolean', instructions: 'a?' },
    b: { type: 'score', instructions: 'b?', criteria: ['0', '1', '2'] },
    c: { type: 'choice', instructions: 'c?', choices: ['x', 'y'] },
  },
};

const evaluate = (channel = '', body: unknown = evaluateBody, init: RequestInit = {}) =>
  fetch(`${sim.url}${channel ? `/ch/${channel}` : ''}/evaluate`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...init,
  });

const chatStream = (channel = '') =>
  fetch(`${sim.url}${channel ? `/ch/${channel}` : ''}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'count to ten' }] }),
  });

/** Reads a body to its end, or to the error that ended it; returns the text that arrived and the error. */
async function readAll(res: Response): Promise<{ text: string; error?: Error }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error: error as Error };
  }
}

describe('fault injection', () => {
  it('status: answers the status with the protocol error body, or the body given, with extra headers', async () => {
    sim.faults.add({ status: 503 });
    const res = await evaluate();
    expect(res.status).toBe(503);
    expect((await jsonOf(res)).error).toMatchObject({ type: 'api_error', code: 'upstream_failure' });

    sim.faults.clear();
    sim.faults.add({ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '7' } });
    const limited = await evaluate();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(await jsonOf(limited)).toEqual({ error: { message: 'slow down' } });

    sim.faults.clear();
    sim.faults.add({ status: 500 });
    const chat = await chatStream();
    expect(chat.status).toBe(500);
    expect((await jsonOf(chat)).error).toEqual({
      message: expect.any(String),
      type: 'server_error',
      param: null,
      code: null,
    });
  });

  it('times: applies a rule that many times, then drops it', async () => {
    const id = sim.faults.add({ status: 502, times: 2 });
    expect(sim.faults.list().map((f) => f.id)).toEqual([id]);
    expect((await evaluate()).status).toBe(502);
    expect((await evaluate()).status).toBe(502);
    expect((await evaluate()).status).toBe(200);
    expect(sim.faults.list()).toEqual([]);
    expect(sim.requests().map((r) => [r.status, r.faultId])).toEqual([
      [502, id],
      [502, id],
      [200, null],
    ]);
  });

  it('chooses rules by channel prefix and model; the first matching rule applies', async () => {
    const primary = sim.faults.add({ channel: 'primary', status: 500 });
    sim.faults.add({ channel: 'primary', status: 404 });
    const byModel = sim.faults.add({ model: 'acme/other', status: 400 });
    expect((await evaluate('primary')).status).toBe(500);
    expect((await evaluate('backup')).status).toBe(200);
    expect((await evaluate('backup', { ...evaluateBody, model: 'acme/other' })).status).toBe(400);
    expect((await evaluate('')).status).toBe(200);
    expect(
      sim.requests().map((r) => ({ channel: r.channel, model: r.model, status: r.status, faultId: r.faultId })),
    ).toEqual([
      { channel: 'primary', model: 'acme/judge-1', status: 500, faultId: primary },
      { channel: 'backup', model: 'acme/judge-1', status: 200, faultId: null },
      { channel: 'backup', model: 'acme/other', status: 400, faultId: byModel },
      { channel: '', model: 'acme/judge-1', status: 200, faultId: null },
    ]);
  });

  it('latencyMs: delays the answer', async () => {
    sim.faults.add({ latencyMs: 250 });
    const started = performance.now();
    const res = await evaluate();
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
  });

  it('hang: never answers, so the client times out; the log says so', async () => {
    sim.faults.add({ hang: true, channel: 'slow' });
    await expect(evaluate('slow', evaluateBody, { signal: AbortSignal.timeout(300) })).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(sim.requests()).toMatchObject([{ channel: 'slow', status: null, outcome: 'hang' }]);
  });

  it('reset: destroys the socket with a TCP reset', async () => {
    sim.faults.add({ reset: true });
    const error = await evaluate().catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'TypeError' });
    expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe('ECONNRESET');
    expect(sim.requests()).toMatchObject([{ status: null, outcome: 'reset' }]);
  });

  it('cutAfterChunks: a stream sends that many events, then the connection drops without a clean end', async () => {
    sim.faults.add({ cutAfterChunks: 3 });
    const res = await chatStream();
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const events = text.split('\n\n').filter(Boolean);
    expect(events).toHaveLength(3);
    expect(text).not.toContain('[DONE]');
    expect(sim.requests()).toMatchObject([{ status: 200, outcome: 'cut' }]);
  });

  it('cutAfterChunks on a plain JSON answer sends half the declared body, then drops', async () => {
    sim.faults.add({ cutAfterChunks: 0 });
    const res = await evaluate();
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    expect(Buffer.byteLength(text)).toBeLessThan(Number(res.headers.get('content-length')));
  });

  it('chunkDelayMs spaces stream events', async () => {
    sim.faults.add({ chunkDelayMs: 10 });
    const started = performance.now();
    const { text, error } = await readAll(await chatStream());
    expect(error).toBeUndefined();
    const events = text.split('\n\n').filter(Boolean).length;
    expect(performance.now() - started).toBeGreaterThanOrEqual(10 * (events - 1) - 5);
  });

  it('malformed json: the body is not JSON', async () => {
    sim.faults.add({ malformed: 'json' });
    const res = await evaluate();
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();

    sim.faults.add({ malformed: 'json' });
    const { text: stream } = await readAll(await chatStream());
    const first = stream.split('\n\n')[0]!.replace(/^data: /, '');
    expect(() => JSON.parse(first)).toThrow();
  });

  it.each([
    [
      'missing-answer',
      (a: Record<string, { type: string; probability?: number; probabilities?: Record<string, number> }>) =>
        expect(Object.keys(a)).toEqual(['b', 'c']),
    ],
    ['out-of-range', (a: Record<string, { probability?: number }>) => expect(a.a!.probability).toBeGreaterThan(1)],
    [
      'bad-sum',
      (a: Record<string, { probabilities?: Record<string, number> }>) =>
        expect(Object.values(a.b!.probabilities!).reduce((x, y) => x + y, 0)).toBeCloseTo(0.5, 9),
    ],
    ['wrong-type', (a: Record<string, { type: string }>) => expect(a.a!.type).toBe('score')],
  ] as const)('malformed shape %s: valid JSON an evaluate worker must refuse', async (shape, check) => {
    sim.faults.add({ malformed: 'shape', shape });
    const res = await evaluate();
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(body.answers).not.toEqual(expectedAnswers(evaluateBody));
    check(body.answers);
  });

  it('control API over HTTP: add, list, delete one, clear; read and clear the request log', async () => {
    const control = (method: string, path: string, body?: unknown) =>
      fetch(`${sim.url}/__sim/${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    const bad = await control('POST', 'faults', { status: 42, hang: 'yes', bogus: 1 });
    expect(bad.status).toBe(400);
    expect((await jsonOf(bad)).error.problems).toEqual([
      'unknown field "bogus"',
      'status must be an integer 100..599',
      'hang must be true',
      'hang, status cannot be combined',
    ]);

    const { id: first } = await jsonOf(await control('POST', 'faults', { channel: 'a', status: 500 }));
    const { id: second } = await jsonOf(await control('POST', 'faults', { channel: 'b', status: 501 }));
    expect((await jsonOf(await control('GET', 'faults'))).data.map((f: { id: string }) => f.id)).toEqual([
      first,
      second,
    ]);
    expect((await control('DELETE', `faults/${first}`)).status).toBe(204);
    expect((await control('DELETE', `faults/${first}`)).status).toBe(404);
    expect((await evaluate('a')).status).toBe(200);
    expect((await evaluate('b')).status).toBe(501);
    expect((await control('DELETE', 'faults')).status).toBe(204);
    expect((await evaluate('b')).status).toBe(200);

    const log = (await jsonOf(await control('GET', 'requests'))).data;
    expect(log.map((r: { channel: string; status: number }) => [r.channel, r.status])).toEqual([
      ['a', 200],
      ['b', 501],
      ['b', 200],
    ]);
    expect((await control('DELETE', 'requests')).status).toBe(204);
    expect((await jsonOf(await control('GET', 'requests'))).data).toEqual([]);
  });

  it('records unknown routes as 404 with no protocol', async () => {
    const res = await fetch(`${sim.url}/ch/x/v9/nothing`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(sim.requests()).toMatchObject([{ channel: 'x', protocol: null, path: '/v9/nothing', status: 404 }]);
  });

  it('close() drops hanging connections instead of waiting for them', async () => {
    const own = await startSim();
    own.faults.add({ hang: true });
    const pending = new Promise<string>((resolve) => {
      const req = httpRequest(`${own.url}/evaluate`, { method: 'POST', headers: { authorization: 'Bearer k' } }, () =>
        resolve('answered'),
      );
      req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      req.end(JSON.stringify(evaluateBody));
    });
    await new Promise((r) => setTimeout(r, 100));
    await own.close();
    expect(await pending).toBe('ECONNRESET');
  });
});
