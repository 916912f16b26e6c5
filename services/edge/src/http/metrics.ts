import { nameServerSpan, type Metrics } from '@gensvc/observability';
import type { NextFunction, Request, Response } from 'express';
import { routeOf } from './request-context';

/**
 * Records each request under its route pattern (never the raw path, which would explode the label set), and gives
 * the request's HTTP server span the same route (Express itself is not instrumented: libs/observability).
 */
export function httpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const end = metrics.httpRequests.startTimer();
    const name = nameServerSpan();
    res.on('finish', () => {
      const route = routeOf(req);
      end({ method: req.method, route, status: String(res.statusCode) });
      name(req.method, route);
    });
    next();
  };
}
