// The evaluate request (spec 2.1, 2.2, DESIGN.md §4 choice question) and what the evaluate.run job answers. One
// schema serves the edge that validates the caller's body, the job that carries it and the worker that checks the
// provider's answers against it. Messages name no field: the edge prefixes the path of the field at fault.
import { z } from 'zod';
import { jsonMap, jsonObject } from './json-map';

export const MAX_QUESTIONS = 20;
export const MAX_LEVELS = 100;
/**
 * A question id. It becomes an object key in answers and a segment of error params (`questions.<id>.criteria`), so
 * no dots, and it must start with a letter or digit (which also rules out `__proto__`).
 */
export const QUESTION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const nonEmptyText = z.string({ error: 'must be a string' }).min(1, 'must not be empty');
const levels = (what: string) =>
  z
    .array(nonEmptyText, { error: `must be an array of 2 to ${MAX_LEVELS} strings (${what})` })
    .min(2, `must hold at least 2 ${what}`)
    .max(MAX_LEVELS, `must hold at most ${MAX_LEVELS} ${what}`);

export const booleanQuestionSchema = z.strictObject({ type: z.literal('boolean'), instructions: nonEmptyText });

export const scoreQuestionSchema = z.strictObject({
  type: z.literal('score'),
  instructions: nonEmptyText,
  /** Descriptions of the score levels, in order: the answer's probabilities are keyed by their indexes. */
  criteria: levels('score levels'),
});

export const choiceQuestionSchema = z.strictObject({
  type: z.literal('choice'),
  instructions: nonEmptyText,
  choices: levels('choices').refine((c) => new Set(c).size === c.length, 'must be distinct'),
});

export const questionSchema = z.discriminatedUnion(
  'type',
  [booleanQuestionSchema, scoreQuestionSchema, choiceQuestionSchema],
  {
    error: (issue) =>
      typeof issue.input === 'object' && issue.input !== null && !Array.isArray(issue.input)
        ? 'must be one of "boolean", "choice", "score"'
        : 'must be a question object',
  },
);

export const questionsSchema = jsonMap(
  {
    key: QUESTION_ID,
    keyMessage: 'is not a valid question id: use 1-64 letters, digits, "_" or "-", starting with a letter or digit',
    min: 1,
    max: MAX_QUESTIONS,
    countMessage: `must hold 1 to ${MAX_QUESTIONS} questions`,
    typeMessage: 'must be an object mapping question ids to questions',
  },
  questionSchema,
);

/** The caller's state is passed on as sent: an object is not rebuilt (which would drop a "__proto__" key of it). */
export const stateSchema = z.union(
  [z.string(), z.array(z.unknown()), jsonObject('must be a string, an object or an array')],
  {
    error: 'must be a string, an object or an array',
  },
);

/** A model id, `<provider>/<model>`: looked up in Postgres, which holds no NUL, and echoed in messages. */
export const MAX_MODEL_ID_CHARS = 200;
export const modelIdSchema = (message: string) =>
  z
    .string({ error: message })
    .min(1, 'must not be empty')
    .max(MAX_MODEL_ID_CHARS, `is at most ${MAX_MODEL_ID_CHARS} characters`)
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not hold control characters');

/** What is evaluated: sent upstream as `{model, state, questions}`, and the basis of the reservation's size. */
export const evaluateInputSchema = z.object({ state: stateSchema, questions: questionsSchema });

/** The body of POST /api/v1/evaluate. */
export const evaluateRequestSchema = z.strictObject({
  model: modelIdSchema('must be a string naming an evaluation model, "<provider>/<model>"'),
  state: stateSchema,
  questions: questionsSchema,
});

export type Question = z.output<typeof questionSchema>;
export type EvaluateInput = z.output<typeof evaluateInputSchema>;
export type EvaluateRequest = z.output<typeof evaluateRequestSchema>;

const probability = z.number().min(0).max(1);
const probabilities = z.record(z.string(), probability);

/** An answer as the caller receives it (spec 2.3); the worker has already checked it against its question. */
export const answerSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('boolean'), probability }),
  z.object({ type: z.literal('score'), score: z.number(), probabilities }),
  z.object({ type: z.literal('choice'), choice: z.string(), probabilities }),
]);
export type Answer = z.output<typeof answerSchema>;

const tokens = z.number().int().min(0);
export const usageSchema = z.object({ inputTokens: tokens, outputTokens: tokens });
export type Usage = z.output<typeof usageSchema>;

/**
 * What an evaluate.run job returns. Failures the caller should hear about (the provider failed, the model went
 * away) are results too, not failed jobs, so that their status and code reach the edge intact; a failed job means
 * the worker itself broke.
 */
export const evaluateRunResultSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    answers: z.record(z.string(), answerSchema),
    usage: usageSchema,
    /**
     * What the answer costs at the model's prices (micro-units, a decimal string: JSON has no BigInt). The worker
     * charges nothing: the edge charges this (at most its hold) through its budget lease once the reply reaches it.
     */
    cost: z.string().regex(/^\d+$/),
  }),
  z.object({
    ok: z.literal(false),
    error: z.object({ status: z.number().int(), code: z.string(), message: z.string(), param: z.string().nullable() }),
  }),
]);
export type EvaluateRunResult = z.output<typeof evaluateRunResultSchema>;

/**
 * What the evaluate worker publishes on a job's `replyTo` channel, under the job's id: the job's result, or `failed`
 * when the worker itself broke (the edge answers 500 and charges nothing).
 */
export const evaluateReplySchema = z.union([
  z.object({ id: z.string(), result: evaluateRunResultSchema }),
  z.object({ id: z.string(), failed: z.literal(true) }),
]);
export type EvaluateReply = z.output<typeof evaluateReplySchema>;
