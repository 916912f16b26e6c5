import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import type { RouteSpec } from '../../http/hot-routes';
import { DEFAULT_EVALUATE_OPTIONS, evaluate, type EvaluateOptions } from './evaluate';
import { EVALUATE_BODY_LIMIT } from './schema';

export function evaluateRoutes(deps: EdgeDeps, options: Partial<EvaluateOptions> = {}): RouteSpec[] {
  return [
    {
      path: '/api/v1/evaluate',
      handlers: [...paidCall(deps, { style: 'bearer', scope: 'llm.evaluate', bodyLimit: EVALUATE_BODY_LIMIT }), evaluate(deps, { ...DEFAULT_EVALUATE_OPTIONS, ...options })],
    },
  ];
}
