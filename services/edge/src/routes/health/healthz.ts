import type { Request, Response } from 'express';

/** The process is up and serving HTTP; says nothing of its dependencies (that is /readyz). */
export function healthz(_req: Request, res: Response) {
  res.json({ status: 'ok' });
}
