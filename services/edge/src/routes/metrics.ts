import { renderMetrics, type Metrics } from '@gensvc/observability';
import type { Request, Response } from 'express';

export function metricsRoute(metrics: Metrics) {
  return async (_req: Request, res: Response) => {
    const { contentType, body } = await renderMetrics(metrics);
    res.type(contentType).send(body);
  };
}
