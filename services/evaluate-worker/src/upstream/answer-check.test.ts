import type { Question } from '@gensvc/contracts';
import { expectedAnswers, usageFor } from '../../../upstream-sim/src/index';
import { InvalidAnswer, checkAnswer } from './answer-check';

const questions: Record<string, Question> = {
  b: { type: 'boolean', instructions: 'Is it?' },
  s: { type: 'score', instructions: 'How much?', criteria: ['none', 'some', 'lots'] },
  c: { type: 'choice', instructions: 'Which?', choices: ['x', 'y'] },
};
type Probabilities = Record<string, number>;
const good = () => ({
  answers: {
    b: { type: 'boolean', probability: 0.25 },
    s: { type: 'score', score: 1.2, probabilities: { '0': 0.2, '1': 0.4, '2': 0.4 } as Probabilities },
    c: { type: 'choice', choice: 'y', probabilities: { x: 0.3, y: 0.7 } as Probabilities },
  },
  usage: { inputTokens: 12, outputTokens: 10 },
});

describe('checkAnswer', () => {
  it("accepts the sim's answers and keeps only the fields of spec 2.3", () => {
    const request = { state: { a: [1, 2] }, questions };
    const body = { answers: expectedAnswers(request), usage: usageFor(request), extra: 'ignored' };
    (body.answers.b as Record<string, unknown>).reasoning = 'dropped';
    const checked = checkAnswer(questions, body);
    expect(checked.usage).toEqual(usageFor(request));
    expect(checked.answers).toEqual(expectedAnswers(request));
    expect(checked.answers.b).not.toHaveProperty('reasoning');
    expect(checked).not.toHaveProperty('extra');
  });

  it('accepts sums within 1e-6 and choice answers that leave out a zero-weight choice', () => {
    const body = good();
    body.answers.s.probabilities = { '0': 0.2, '1': 0.4, '2': 0.4000009 };
    body.answers.c.probabilities = { y: 1 };
    expect(() => checkAnswer(questions, body)).not.toThrow();
  });

  it.each<[string, (b: ReturnType<typeof good>) => unknown, RegExp]>([
    ['a body that is not an object', () => [1], /not a JSON object/],
    ['no answers', (b) => ({ usage: b.usage }), /answers is not an object/],
    [
      'a missing answer',
      (b) => {
        delete (b.answers as Record<string, unknown>).c;
        return b;
      },
      /answers\.c is missing/,
    ],
    [
      'an answer to no question',
      (b) => ({ ...b, answers: { ...b.answers, zz: b.answers.b } }),
      /answers\.zz answers no question/,
    ],
    [
      'a wrong type',
      (b) => {
        b.answers.b.type = 'score';
        return b;
      },
      /answers\.b\.type is "score"/,
    ],
    [
      'a probability above 1',
      (b) => {
        b.answers.b.probability = 1.01;
        return b;
      },
      /answers\.b\.probability is 1\.01/,
    ],
    [
      'a negative probability',
      (b) => {
        b.answers.s.probabilities['0'] = -0.1;
        return b;
      },
      /answers\.s\.probabilities\.0 is -0\.1/,
    ],
    [
      'a probability as text',
      (b) => {
        (b.answers.b as Record<string, unknown>).probability = '0.5';
        return b;
      },
      /answers\.b\.probability/,
    ],
    [
      'score sums off by more than 1e-6',
      (b) => {
        b.answers.s.probabilities['2'] = 0.41;
        return b;
      },
      /answers\.s\.probabilities sum to/,
    ],
    [
      'a missing score level',
      (b) => {
        b.answers.s.probabilities = { '0': 0.5, '1': 0.5 };
        return b;
      },
      /no probability for level 2/,
    ],
    [
      'a score key that is no criteria index',
      (b) => {
        b.answers.s.probabilities = { '0': 0.2, '1': 0.4, '3': 0.4 };
        return b;
      },
      /"3", which is not one of the criteria indexes/,
    ],
    [
      'a score outside the levels',
      (b) => {
        b.answers.s.score = 2.5;
        return b;
      },
      /answers\.s\.score is 2\.5/,
    ],
    [
      'a choice not among the choices',
      (b) => {
        b.answers.c.choice = 'z';
        return b;
      },
      /answers\.c\.choice is "z"/,
    ],
    [
      'a choice probability for an unknown choice',
      (b) => {
        b.answers.c.probabilities = { x: 0.3, z: 0.7 };
        return b;
      },
      /"z", which is not one of the choices/,
    ],
    [
      'choice sums off',
      (b) => {
        b.answers.c.probabilities = { x: 0.3, y: 0.6 };
        return b;
      },
      /answers\.c\.probabilities sum to/,
    ],
    ['no usage', (b) => ({ answers: b.answers }), /usage is not an object/],
    [
      'fractional tokens',
      (b) => {
        b.usage.inputTokens = 1.5;
        return b;
      },
      /usage\.inputTokens is 1\.5/,
    ],
    [
      'negative tokens',
      (b) => {
        b.usage.outputTokens = -1;
        return b;
      },
      /usage\.outputTokens is -1/,
    ],
    [
      'more tokens than a ledger entry holds',
      (b) => {
        b.usage.inputTokens = 2 ** 31;
        return b;
      },
      /usage\.inputTokens is 2147483648/,
    ],
  ])('refuses %s', (_what, spoil, message) => {
    let error: unknown;
    try {
      checkAnswer(questions, spoil(good()));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidAnswer);
    expect((error as Error).message).toMatch(message);
  });
});
