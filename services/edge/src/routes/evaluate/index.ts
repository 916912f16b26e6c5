import express from 'express';
import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { DEFAULT_EVALUATE_OPTIONS, evaluate, type EvaluateOptions } from './evaluate';
import { EVALUATE_BODY_LIMIT } from './schema';

export function evaluateRoutes(deps: EdgeDeps, options: Partial<EvaluateOptions> = {}): express.Router {
  const router = express.Router({ caseSensitive: true });
  router.post(
    '/api/v1/evaluate',
    ...paidCall(deps, { style: 'bearer', scope: 'llm.evaluate', bodyLimit: EVALUATE_BODY_LIMIT }),
    evaluate(deps, { ...DEFAULT_EVALUATE_OPTIONS, ...options }),
  );
  return router;
}
