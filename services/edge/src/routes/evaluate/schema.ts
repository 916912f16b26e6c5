import { evaluateRequestSchema, type EvaluateRequest } from '@gensvc/contracts';
import { parseBody } from '../../http/parse-body';

/** The JSON body limit of POST /api/v1/evaluate (spec §8 leaves the size of state open). */
export const EVALUATE_BODY_LIMIT = 1024 * 1024;

/** The body as spec 2.1/2.2 and DESIGN.md §4 define it, or 400 naming the first bad field (`questions.q1.criteria`). */
export const parseEvaluateRequest = (body: unknown): EvaluateRequest => parseBody(evaluateRequestSchema, body);
