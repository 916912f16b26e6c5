import { nameServerSpan, type Metrics } from '@gensvc/observability';
import type { NextFunction, Request, Response } from 'express';

/**
 * Records each request under its route pattern (never the raw path, which would explode the label set), and gives
 * the request's HTTP server span the same route (Express itself is not instrumented: libs/observability).
 */
export function httpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const end = metrics.httpRequests.startTimer();
    const name = nameServerSpan();
    res.on('finish', () => {
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
      name(req.method, route);
    });
    next();
  };
}
