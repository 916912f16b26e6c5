import { evaluateRequestSchema, type EvaluateRequest } from '@gensvc/contracts';
import { AppError, errors } from '@gensvc/errors';
import type { z } from 'zod';

/** The JSON body limit of POST /api/v1/evaluate (spec §8 leaves the size of state open). */
export const EVALUATE_BODY_LIMIT = 1024 * 1024;

/** The body as spec 2.1/2.2 and DESIGN.md §4 define it, or 400 naming the first field at fault (`questions.q1.criteria`). */
export function parseEvaluateRequest(body: unknown): EvaluateRequest {
  const parsed = evaluateRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw invalidField(parsed.error.issues[0]!);
}

function invalidField(issue: z.core.$ZodIssue): AppError {
  // An unknown field is reported at its own path, so the param names it rather than its parent.
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
  if (path.length === 0) return errors.invalidRequest('The request body must be a JSON object with model, state and questions.');
  const param = path.map(String).join('.');
  const message = issue.code === 'unrecognized_keys' ? 'is not a field of this request' : issue.message;
  return errors.invalidRequest(`${param} ${message}.`, param);
}

/** Unknown model: 400 on this route (the body is what is wrong), with the same code as elsewhere. */
export const unknownModel = (model: string) =>
  new AppError({ status: 400, code: 'model_not_found', message: `There is no model "${model}".`, param: 'model' });
