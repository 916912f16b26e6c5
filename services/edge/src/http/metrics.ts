import type { Metrics } from '@gensvc/observability';
import type { NextFunction, Request, Response } from 'express';

/** Records each request under its route pattern (never the raw path, which would explode the label set). */
export function httpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const end = metrics.httpRequests.startTimer();
    res.on('finish', () => {
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
