import { answerSchema, evaluateRequestSchema } from '@gensvc/contracts';
import { z } from 'zod';
import { PAID_CALL, idempotencyHeader, money, operation } from '../../openapi/operation';

const evaluateAnswer = z.object({
  model: z.string(),
  answers: z.record(z.string(), answerSchema).describe('One answer per question id.'),
  usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int() }),
  cost: money,
});

export const evaluateApi = [
  operation({
    method: 'post',
    route: '/api/v1/evaluate',
    operationId: 'evaluate',
    summary: 'Ask an evaluation model questions about a state (synchronous)',
    tag: 'Evaluate',
    auth: 'bearer',
    scope: 'llm.evaluate',
    headers: idempotencyHeader,
    body: { json: evaluateRequestSchema },
    responses: { 200: { description: 'The answers, usage and cost.', schema: evaluateAnswer } },
    errors: [
      ...PAID_CALL,
      'model_not_found',
      'model_not_supported',
      'no_channel_available',
      'upstream_error',
      'upstream_invalid_response',
      'upstream_timeout',
      'upstream_rejected_request',
    ],
  }),
];
