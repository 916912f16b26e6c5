// The upstream evaluate protocol over a real socket: answers equal expectedAnswers(), are valid distributions,
// and usage follows the documented formula.
import { jsonOf } from '@gensvc/testing';
import { canonicalJson, expectedAnswers, startSim, usageFor, type EvaluateRequest, type Sim } from './index';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim();
});
afterAll(() => sim.close());
beforeEach(() => sim.resetRequests());

const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: 'Bearer sk-test' }) =>
  fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const request: EvaluateRequest = {
  model: 'acme/judge-1',
  state: { transcript: ['hello', 'héllo wörld'], meta: { turn: 3, lang: 'fr' } },
  questions: {
    polite: { type: 'boolean', instructions: 'Is the reply polite?' },
    quality: { type: 'score', instructions: 'Rate the reply', criteria: ['bad', 'fine', 'good', 'great', 'perfect'] },
    intent: { type: 'choice', instructions: 'What does the user want?', choices: ['refund', 'info', 'complaint'] },
  },
};

describe('POST /evaluate', () => {
  it('answers every question as expectedAnswers() predicts, with valid probabilities', async () => {
    const res = await post('/evaluate', request);
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(body.answers).toEqual(expectedAnswers(request));
    expect(body.usage).toEqual(usageFor(request));

    const { polite, quality, intent } = body.answers;
    expect(polite.type).toBe('boolean');
    expect(polite.probability).toBeGreaterThanOrEqual(0);
    expect(polite.probability).toBeLessThanOrEqual(1);

    expect(Object.keys(quality.probabilities)).toEqual(['0', '1', '2', '3', '4']);
    const qp = Object.values(quality.probabilities) as number[];
    expect(Math.abs(qp.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-9);
    for (const p of qp) expect(p > 0 && p < 1).toBe(true);
    expect(quality.score).toBeCloseTo(
      qp.reduce((sum, p, i) => sum + i * p, 0),
      12,
    );

    expect(Object.keys(intent.probabilities).sort()).toEqual(['complaint', 'info', 'refund']);
    const ip = intent.probabilities as Record<string, number>;
    expect(Math.abs(Object.values(ip).reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-9);
    expect(ip[intent.choice]).toBe(Math.max(...Object.values(ip)));
  });

  it('derives answers from state, question id and question: key order does not matter, content does', async () => {
    const reordered = {
      questions: request.questions,
      state: { meta: { lang: 'fr', turn: 3 }, transcript: ['hello', 'héllo wörld'] },
      model: request.model,
    };
    const a = await jsonOf(await post('/evaluate', request));
    const b = await jsonOf(await post('/evaluate', reordered));
    expect(b.answers).toEqual(a.answers);

    const other = await jsonOf(await post('/evaluate', { ...request, state: 'a different state' }));
    expect(other.answers.polite.probability).not.toBe(a.answers.polite.probability);
    expect(other.answers).toEqual(expectedAnswers({ ...request, state: 'a different state' }));

    const renamed = { ...request, questions: { courteous: request.questions.polite! } };
    const c = await jsonOf(await post('/evaluate', renamed));
    expect(c.answers.courteous.probability).not.toBe(a.answers.polite.probability);
  });

  it('reports input tokens as ceil(bytes of {state, questions} / 4), never above the request size', async () => {
    const body = JSON.stringify(request);
    const usage = (await jsonOf(await post('/evaluate', body))).usage;
    const expectedInput = Math.ceil(
      Buffer.byteLength(JSON.stringify({ state: request.state, questions: request.questions })) / 4,
    );
    expect(usage).toEqual({ inputTokens: expectedInput, outputTokens: 1 + 3 * 3 });
    expect(usage.inputTokens).toBeLessThanOrEqual(Buffer.byteLength(body));
  });

  it('serves any path ending in /evaluate and records channel, model and status', async () => {
    const res = await post('/ch/judge-a/api/v2/evaluate', request);
    expect(res.status).toBe(200);
    expect((await jsonOf(res)).answers).toEqual(expectedAnswers(request));
    expect(sim.requests()).toMatchObject([
      {
        channel: 'judge-a',
        protocol: 'evaluate',
        path: '/api/v2/evaluate',
        model: 'acme/judge-1',
        status: 200,
        outcome: 'complete',
        faultId: null,
      },
    ]);
  });

  it('requires a non-empty bearer key', async () => {
    for (const headers of [{}, { authorization: 'Bearer ' }, { authorization: 'Basic abc' }] as Array<
      Record<string, string>
    >) {
      const res = await post('/evaluate', request, headers);
      expect(res.status).toBe(401);
      expect((await jsonOf(res)).error.type).toBe('authentication_error');
    }
  });

  it.each([
    ['invalid JSON', '{"model":'],
    ['no state', { model: 'm', questions: { a: { type: 'boolean', instructions: 'x' } } }],
    ['no questions', { model: 'm', state: 1, questions: {} }],
    ['unknown type', { model: 'm', state: 1, questions: { a: { type: 'essay', instructions: 'x' } } }],
    [
      'score without criteria',
      { model: 'm', state: 1, questions: { a: { type: 'score', instructions: 'x', criteria: [] } } },
    ],
    [
      'duplicate choices',
      { model: 'm', state: 1, questions: { a: { type: 'choice', instructions: 'x', choices: ['a', 'a'] } } },
    ],
    ['no model', { state: 1, questions: { a: { type: 'boolean', instructions: 'x' } } }],
  ])('answers 400 for %s', async (_name, body) => {
    const res = await post('/evaluate', body);
    expect(res.status).toBe(400);
    const error = (await jsonOf(res)).error;
    expect(error.type).toBe('invalid_request_error');
    expect(typeof error.message).toBe('string');
  });

  it('canonical JSON sorts keys at every depth', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
  });
});
