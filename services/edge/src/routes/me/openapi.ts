import { z } from 'zod';
import { KEY_AUTH, operation, timestamp } from '../../openapi/operation';

const balance = z.object({
  object: z.literal('balance'),
  workspace_id: z.string(),
  amount: z.number().describe('The workspace balance, in its currency.'),
  currency: z.string(),
  key: z.object({ spend_cap: z.number().nullable(), spent: z.number() }),
});

const callbackSecret = z.object({
  object: z.literal('callback_secret'),
  secret: z
    .string()
    .describe('whsec_…: keys SVC-Signature (the whole text) and webhook-signature (the base64 after whsec_).'),
  previous_secret_expires_at: timestamp.nullable().describe('Until then the old secret signs beside the new one.'),
  rotated_at: timestamp.nullable(),
  created_at: timestamp,
});

export const meApi = [
  operation({
    method: 'get',
    route: '/api/v1/me/balance',
    operationId: 'getBalance',
    summary: "The workspace's balance and the key's spend",
    tag: 'Account',
    auth: 'bearer',
    scope: 'account.read',
    responses: { 200: { description: 'The balance.', schema: balance } },
    errors: [...KEY_AUTH, 'not_found'],
  }),
  operation({
    method: 'get',
    route: '/api/v1/me/callback-secret',
    operationId: 'getCallbackSecret',
    summary: 'The callback signing secret (made on first read)',
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    responses: { 200: { description: 'The secret.', schema: callbackSecret } },
    errors: [...KEY_AUTH, 'insufficient_role'],
  }),
  operation({
    method: 'post',
    route: '/api/v1/me/callback-secret/rotate',
    operationId: 'rotateCallbackSecret',
    summary: 'Rotate the callback signing secret (the old one signs beside it for 24 h)',
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    responses: { 200: { description: 'The new secret.', schema: callbackSecret } },
    errors: [...KEY_AUTH, 'insufficient_role'],
  }),
  operation({
    method: 'post',
    route: '/api/v1/me/callback-secret/retire-previous',
    operationId: 'retirePreviousCallbackSecret',
    summary: "End a rotation's 24 h overlap now: deliveries are signed with the current secret only",
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    responses: {
      200: {
        description: 'The secret, previous_secret_expires_at null. Idempotent: with no previous secret, no change.',
        schema: callbackSecret,
      },
    },
    errors: [...KEY_AUTH, 'insufficient_role'],
  }),
];
