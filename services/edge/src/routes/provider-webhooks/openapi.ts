import { z } from 'zod';
import { HOSTILE_INPUT, operation } from '../../openapi/operation';

export const providerWebhookApi = [
  operation({
    method: 'post',
    route: '/v1/provider-webhooks/:provider/:taskId',
    operationId: 'receiveProviderWebhook',
    summary: "Where Replicate and fal report a task's job ended (not for API callers)",
    description:
      "On only with PROVIDER_WEBHOOK_BASE_URL set. Replicate's Standard Webhooks signature (webhook-id, " +
      "webhook-timestamp, webhook-signature) or fal's ED25519 signature (x-fal-webhook-*, for the account " +
      "FAL_WEBHOOK_USER_ID) is verified over the raw body; a verified call brings the task's next poll forward.",
    tag: 'Provider webhooks',
    auth: 'none',
    params: z.object({ provider: z.enum(['replicate', 'fal']), taskId: z.string().max(64) }),
    body: {
      json: z.looseObject({}).describe("The provider's prediction (Replicate) or result (fal), as it sends it."),
    },
    responses: {
      204: { description: 'Verified (or about a task that has moved on): nothing for the provider to retry.' },
    },
    errors: [
      ...HOSTILE_INPUT,
      'invalid_webhook_signature',
      'not_found',
      'payload_too_large',
      'invalid_json',
      'invalid_request',
      'webhook_keys_unavailable',
    ],
  }),
];
