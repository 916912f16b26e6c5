// The upstream evaluate protocol: POST <anything>/evaluate {model, state, questions} -> {answers, usage}.
import { expectedAnswers, usageFor, type Answer, type EvaluateRequest, type Question } from '../deterministic';
import type { FaultRule } from '../faults';
import { bearer, jsonObject, type Protocol } from '../protocol';
import { json } from '../reply';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
};

const errorReply = (status: number, message?: string, code?: string) =>
  json(status, {
    error: {
      type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      code: code ?? (status >= 500 ? 'upstream_failure' : 'invalid_request'),
      message: message ?? `simulated status ${status}`,
    },
  });

function questionProblem(id: string, q: unknown): string | null {
  if (q === null || typeof q !== 'object' || Array.isArray(q)) return `questions.${id} must be an object`;
  const question = q as Record<string, unknown>;
  if (typeof question.instructions !== 'string') return `questions.${id}.instructions must be a string`;
  const list = (field: 'criteria' | 'choices') => {
    const v = question[field];
    if (!Array.isArray(v) || v.length === 0 || v.some((s) => typeof s !== 'string'))
      return `questions.${id}.${field} must be a non-empty array of strings`;
    return null;
  };
  switch (question.type) {
    case 'boolean':
      return null;
    case 'score':
      return list('criteria');
    case 'choice': {
      const problem = list('choices');
      if (problem) return problem;
      const choices = question.choices as string[];
      return new Set(choices).size === choices.length ? null : `questions.${id}.choices must be distinct`;
    }
    default:
      return `questions.${id}.type must be one of boolean, score, choice`;
  }
}

export const evaluateProtocol: Protocol<EvaluateRequest> = {
  name: 'evaluate',
  matches: (method, path) => method === 'POST' && (path === '/evaluate' || path.endsWith('/evaluate')),
  parse(r) {
    const body = jsonObject(r.body);
    const model = typeof body?.model === 'string' ? body.model : undefined;
    if (!bearer(r.req))
      return { model, error: errorReply(401, 'missing or malformed Authorization: Bearer header', 'unauthenticated') };
    if (!body) return { model, error: errorReply(400, 'the body must be a JSON object') };
    if (typeof body.model !== 'string' || !body.model)
      return { model, error: errorReply(400, 'model must be a non-empty string') };
    if (body.state === undefined) return { model, error: errorReply(400, 'state is required') };
    const questions = body.questions;
    if (
      questions === null ||
      typeof questions !== 'object' ||
      Array.isArray(questions) ||
      Object.keys(questions).length === 0
    ) {
      return { model, error: errorReply(400, 'questions must be a non-empty object of question id to question') };
    }
    for (const [id, q] of Object.entries(questions)) {
      const problem = questionProblem(id, q);
      if (problem) return { model, error: errorReply(400, problem) };
    }
    return { model, value: { model: body.model, state: body.state, questions: questions as Record<string, Question> } };
  },
  answer: (request) => json(200, { answers: expectedAnswers(request), usage: usageFor(request) }),
  errorReply: (status, message) => errorReply(status, message),
  malformShape: (body, fault) => malformEvaluate(body, fault),
};

/** A wrong but parseable answer set: what an evaluate worker must refuse to bill. */
function malformEvaluate(body: unknown, fault: FaultRule): unknown {
  const reply = body as { answers?: Record<string, Answer> } | null;
  if (!reply?.answers) return { unexpected: body };
  const answers = structuredClone(reply.answers) as Record<string, Answer>;
  const ids = Object.keys(answers);
  const first = ids[0];
  if (first === undefined) return { ...reply, answers };
  const shape = fault.shape ?? 'missing-answer';
  const outOfRange = (a: Answer) => {
    if (a.type === 'boolean') a.probability = 1.5;
    else {
      const key = Object.keys(a.probabilities)[0]!;
      a.probabilities[key] = -0.25;
    }
  };
  if (shape === 'missing-answer') delete answers[first];
  else if (shape === 'out-of-range') outOfRange(answers[first]!);
  else if (shape === 'wrong-type')
    (answers[first] as { type: string }).type = answers[first]!.type === 'boolean' ? 'score' : 'boolean';
  else {
    // bad-sum needs a distribution; an all-boolean request gets an out-of-range probability instead.
    const target = ids
      .map((id) => answers[id]!)
      .find((a): a is Exclude<Answer, { type: 'boolean' }> => a.type !== 'boolean');
    if (target) for (const k of Object.keys(target.probabilities)) target.probabilities[k]! *= 0.5;
    else outOfRange(answers[first]!);
  }
  return { ...reply, answers };
}
