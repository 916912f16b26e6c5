import { evaluateRequestSchema } from './evaluate';

const ok = {
  model: 'sim/judge',
  state: { text: 'hi' },
  questions: { q1: { type: 'boolean', instructions: 'Is it?' } },
};

/** The first problem as the edge reports it: its path and message. */
function firstProblem(body: unknown) {
  const r = evaluateRequestSchema.safeParse(body);
  if (r.success) return null;
  const issue = r.error.issues[0]!;
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path;
  return { path: path.join('.'), message: issue.message };
}

describe('evaluateRequestSchema', () => {
  it('accepts each question type, and state as a string, an object or an array', () => {
    for (const state of ['text', { a: 1 }, [1, 'two']]) {
      const body = {
        ...ok,
        state,
        questions: {
          b: { type: 'boolean', instructions: 'Is it?' },
          s: { type: 'score', instructions: 'How good?', criteria: ['bad', 'ok', 'good'] },
          c: { type: 'choice', instructions: 'Which?', choices: ['red', 'blue'] },
        },
      };
      expect(evaluateRequestSchema.parse(body)).toEqual(body);
    }
  });

  it.each([
    [{ ...ok, model: 3 }, 'model', /string naming an evaluation model/],
    [{ ...ok, state: 5 }, 'state', /string, an object or an array/],
    [{ ...ok, state: null }, 'state', /string, an object or an array/],
    [{ ...ok, questions: [] }, 'questions', /object mapping question ids/],
    [{ ...ok, questions: {} }, 'questions', /1 to 20 questions/],
    [
      {
        ...ok,
        questions: Object.fromEntries(
          Array.from({ length: 21 }, (_, i) => [`q${i}`, { type: 'boolean', instructions: 'x' }]),
        ),
      },
      'questions',
      /1 to 20/,
    ],
    [
      { ...ok, questions: { 'a.b': { type: 'boolean', instructions: 'x' } } },
      'questions.a.b',
      /not a valid question id/,
    ],
    [{ ...ok, questions: { _x: { type: 'boolean', instructions: 'x' } } }, 'questions._x', /not a valid question id/],
    [{ ...ok, questions: { q1: 'x' } }, 'questions.q1', /question object/],
    [
      { ...ok, questions: { q1: { type: 'essay', instructions: 'x' } } },
      'questions.q1.type',
      /one of "boolean", "choice", "score"/,
    ],
    [{ ...ok, questions: { q1: { instructions: 'x' } } }, 'questions.q1.type', /one of "boolean"/],
    [{ ...ok, questions: { q1: { type: 'boolean' } } }, 'questions.q1.instructions', /must be a string/],
    [{ ...ok, questions: { q1: { type: 'boolean', instructions: '' } } }, 'questions.q1.instructions', /not be empty/],
    [
      { ...ok, questions: { q1: { type: 'score', instructions: 'x' } } },
      'questions.q1.criteria',
      /array of 2 to 100 strings/,
    ],
    [
      { ...ok, questions: { q1: { type: 'score', instructions: 'x', criteria: ['only'] } } },
      'questions.q1.criteria',
      /at least 2/,
    ],
    [
      { ...ok, questions: { q1: { type: 'score', instructions: 'x', criteria: ['a', 7] } } },
      'questions.q1.criteria.1',
      /must be a string/,
    ],
    [
      { ...ok, questions: { q1: { type: 'choice', instructions: 'x', choices: ['a'] } } },
      'questions.q1.choices',
      /at least 2/,
    ],
    [
      { ...ok, questions: { q1: { type: 'choice', instructions: 'x', choices: ['a', 'a'] } } },
      'questions.q1.choices',
      /distinct/,
    ],
    [
      { ...ok, questions: { q1: { type: 'choice', instructions: 'x', criteria: ['a', 'b'] } } },
      'questions.q1.choices',
      /array/,
    ],
    [
      { ...ok, questions: { q1: { type: 'boolean', instructions: 'x', criteria: ['a', 'b'] } } },
      'questions.q1.criteria',
      /.+/,
    ],
    [{ ...ok, extra: true }, 'extra', /.+/],
  ])('%j → %s', (body, path, message) => {
    const problem = firstProblem(body);
    expect(problem?.path).toBe(path);
    expect(problem?.message).toMatch(message);
  });
});

describe('maps read from JSON', () => {
  // JSON.parse makes "__proto__" an own key, as a caller sends it; an object literal would set the prototype instead.
  const parsed = (text: string) => JSON.parse(text) as unknown;

  it('refuses a "__proto__" question id beside a valid one: the whole request, not the request without it', () => {
    const body = parsed(
      '{"model":"sim/judge","state":"s","questions":{"q1":{"type":"boolean","instructions":"x"},' +
        '"__proto__":{"type":"boolean","instructions":"y"}}}',
    );
    expect(firstProblem(body)).toEqual({
      path: 'questions.__proto__',
      message: expect.stringMatching(/is not a valid question id/),
    });
  });

  it('counts a "__proto__" key among the questions it limits', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `"q${i}":{"type":"boolean","instructions":"x"}`).join(',');
    expect(firstProblem(parsed(`{"model":"sim/judge","state":"s","questions":{${ids},"__proto__":{}}}`))).toMatchObject(
      { path: 'questions', message: 'must hold 1 to 20 questions' },
    );
  });

  it('keeps every key of an object state as sent, "__proto__" included (it is what is evaluated and billed)', () => {
    const body = parsed(
      '{"model":"sim/judge","state":{"__proto__":{"x":1},"a":2},' +
        '"questions":{"q1":{"type":"boolean","instructions":"x"}}}',
    );
    const out = evaluateRequestSchema.parse(body);
    expect(JSON.stringify(out.state)).toBe('{"__proto__":{"x":1},"a":2}');
  });

  it('refuses a NUL or another control character in the model id', () => {
    expect(firstProblem({ ...ok, model: 'sim/judge\u0000' })).toEqual({
      path: 'model',
      message: 'must not hold control characters',
    });
  });
});
