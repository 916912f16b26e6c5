// A provider's evaluate answer is checked whole before anything is charged for it: one answer per question id, of
// the question's type, probabilities within [0, 1], score and choice probabilities summing to 1 (±1e-6), score
// keys the criteria indexes, the choice one of the choices, usage in whole tokens.
import type { Answer, Question, Usage } from '@gensvc/contracts';

const SUM_TOLERANCE = 1e-6;

export class InvalidAnswer extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidAnswer';
  }
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isProbability = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1;
/** Stored as a Postgres integer in the ledger: a count past it is no real usage. */
const MAX_TOKENS = 2_147_483_647;
const isTokenCount = (v: unknown): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_TOKENS;
const show = (v: unknown) => (v === undefined ? 'missing' : JSON.stringify(v)?.slice(0, 60));

/** The answers and usage, rebuilt with only the fields of spec 2.3; throws InvalidAnswer naming what is wrong. */
export function checkAnswer(
  questions: Readonly<Record<string, Question>>,
  body: unknown,
): { answers: Record<string, Answer>; usage: Usage } {
  if (!isObject(body)) throw new InvalidAnswer('the answer is not a JSON object');
  const { answers, usage } = body;
  if (!isObject(answers)) throw new InvalidAnswer('answers is not an object');
  for (const id of Object.keys(answers)) {
    if (!Object.hasOwn(questions, id)) throw new InvalidAnswer(`answers.${id} answers no question that was asked`);
  }
  const checked: [string, Answer][] = [];
  for (const [id, question] of Object.entries(questions)) {
    const a = Object.hasOwn(answers, id) ? answers[id] : undefined;
    if (!isObject(a)) throw new InvalidAnswer(`answers.${id} is ${a === undefined ? 'missing' : 'not an object'}`);
    if (a.type !== question.type)
      throw new InvalidAnswer(`answers.${id}.type is ${show(a.type)}, the question is of type "${question.type}"`);
    checked.push([id, checkOne(`answers.${id}`, question, a)]);
  }
  if (!isObject(usage)) throw new InvalidAnswer('usage is not an object');
  for (const field of ['inputTokens', 'outputTokens'] as const) {
    if (!isTokenCount(usage[field]))
      throw new InvalidAnswer(`usage.${field} is ${show(usage[field])}, not a whole number of tokens`);
  }
  return {
    answers: Object.fromEntries(checked),
    usage: { inputTokens: usage.inputTokens as number, outputTokens: usage.outputTokens as number },
  };
}

function checkOne(at: string, question: Question, a: Obj): Answer {
  switch (question.type) {
    case 'boolean':
      if (!isProbability(a.probability))
        throw new InvalidAnswer(`${at}.probability is ${show(a.probability)}, not a number in [0, 1]`);
      return { type: 'boolean', probability: a.probability };
    case 'score': {
      const indexes = question.criteria.map((_, i) => String(i));
      const probabilities = distribution(`${at}.probabilities`, a.probabilities, indexes, true);
      const score = a.score;
      if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > question.criteria.length - 1) {
        throw new InvalidAnswer(`${at}.score is ${show(score)}, not a number in [0, ${question.criteria.length - 1}]`);
      }
      return { type: 'score', score, probabilities };
    }
    case 'choice': {
      if (typeof a.choice !== 'string' || !question.choices.includes(a.choice)) {
        throw new InvalidAnswer(`${at}.choice is ${show(a.choice)}, not one of the choices`);
      }
      return {
        type: 'choice',
        choice: a.choice,
        probabilities: distribution(`${at}.probabilities`, a.probabilities, question.choices, false),
      };
    }
  }
}

/**
 * Probabilities keyed by `keys` and summing to 1. Score answers must give every level (keys are the criteria
 * indexes); choice answers may leave out choices they give no weight, but may not name anything else.
 */
function distribution(at: string, value: unknown, keys: readonly string[], everyKey: boolean): Record<string, number> {
  if (!isObject(value)) throw new InvalidAnswer(`${at} is ${value === undefined ? 'missing' : 'not an object'}`);
  const entries = Object.entries(value);
  for (const [k, p] of entries) {
    if (!keys.includes(k))
      throw new InvalidAnswer(
        `${at} has the key ${JSON.stringify(k)}, which is not one of ` +
          (everyKey ? 'the criteria indexes' : 'the choices'),
      );
    if (!isProbability(p)) throw new InvalidAnswer(`${at}.${k} is ${show(p)}, not a number in [0, 1]`);
  }
  if (everyKey) {
    const missing = keys.find((k) => !Object.hasOwn(value, k));
    if (missing !== undefined) throw new InvalidAnswer(`${at} has no probability for level ${missing}`);
  }
  const sum = entries.reduce((s, [, p]) => s + (p as number), 0);
  if (Math.abs(sum - 1) > SUM_TOLERANCE) throw new InvalidAnswer(`${at} sum to ${sum}, not 1`);
  return Object.fromEntries(entries as [string, number][]);
}
