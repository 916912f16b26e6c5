import { z } from 'zod';
import { errorBodySchema, operation } from '../../openapi/operation';

export const healthApi = [
  operation({
    method: 'get',
    route: '/healthz',
    operationId: 'healthz',
    summary: 'Liveness: the process answers',
    tag: 'Health',
    auth: 'none',
    responses: { 200: { description: 'Alive.', schema: z.object({ status: z.literal('ok') }) } },
    errors: [],
  }),
  operation({
    method: 'get',
    route: '/readyz',
    operationId: 'readyz',
    summary: 'Readiness: Postgres, Redis and S3 answer',
    tag: 'Health',
    auth: 'none',
    responses: {
      200: { description: 'Ready.', schema: z.object({ status: z.literal('ready') }) },
      503: {
        description: 'Not ready: the error body, without which store failed or why (the ops port says).',
        schema: errorBodySchema.extend({ status: z.literal('unavailable') }),
      },
    },
    errors: [],
  }),
];
